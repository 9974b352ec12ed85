// check-manifests validates gpulet's Kubernetes manifests as a kube-apiserver
// would (see package manifests) and can write out the config file the
// DaemonSet reads, so that gpulet itself can check it.
//
//	check-manifests [--docs DIR] [--config-out FILE] DEPLOY_DIR
//
// Exit status 0 when every check passes, 1 with the first problem otherwise,
// 2 on a usage error.
package main

import (
	"flag"
	"fmt"
	"os"

	"gpulet.dev/test/manifests"
)

func main() {
	docs := flag.String("docs", "docs", "directory of gpulet's Markdown docs (the documented environment variables)")
	configOut := flag.String("config-out", "", "write the config file the DaemonSet reads (CONFIG_FILE) to this file")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [--docs DIR] [--config-out FILE] DEPLOY_DIR\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	report, err := manifests.CheckDir(flag.Arg(0), *docs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "check-manifests: %v\n", err)
		os.Exit(1)
	}
	report.Print(os.Stdout)
	if *configOut != "" {
		if len(report.ConfigFiles) != 1 {
			fmt.Fprintf(os.Stderr, "check-manifests: --config-out: the manifests carry %d config files, expected 1\n", len(report.ConfigFiles))
			os.Exit(1)
		}
		if err := os.WriteFile(*configOut, []byte(report.ConfigFiles[0].Data), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "check-manifests: %v\n", err)
			os.Exit(1)
		}
		fmt.Printf("wrote %s\n", *configOut)
	}
}
