// Command cdi-validate judges CDI spec files with the CDI project's own Go
// library (tags.cncf.io/container-device-interface), the code container
// runtimes (containerd, CRI-O, podman) use to read them.
//
// It loads every spec in --spec-dir through the library's cache, fails on
// any spec or directory error the library reports, resolves the requested
// qualified device names and injects them into a minimal OCI runtime spec,
// as a runtime does before it creates a container. The resulting OCI spec is
// printed as JSON: one spec with every device injected, or with --each one
// spec per device, keyed by the device's qualified name.
//
// Usage:
//
//	cdi-validate --spec-dir DIR [--all] [--each] [--output FILE]
//	             [--min-devices N] [vendor/class=name ...]
//
// Exit status: 0 valid and resolved, 1 invalid spec or unresolvable device,
// 2 usage error.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

type options struct {
	specDir    string
	all        bool
	each       bool
	output     string
	minDevices int
	devices    []string
}

func parseArgs(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("cdi-validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.specDir, "spec-dir", "", "directory holding the CDI spec files (required)")
	fs.BoolVar(&o.all, "all", false, "resolve every device the specs define")
	fs.BoolVar(&o.each, "each", false, "inject each device into its own OCI spec")
	fs.StringVar(&o.output, "output", "", "write the OCI JSON here instead of standard output")
	fs.IntVar(&o.minDevices, "min-devices", 0, "fail when the specs define fewer devices")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.specDir == "" {
		return o, errors.New("--spec-dir is required")
	}
	o.devices = fs.Args()
	if !o.all && len(o.devices) == 0 {
		return o, errors.New("name devices to resolve, or pass --all")
	}
	return o, nil
}

// loadCache reads the spec dir strictly: any error the library records for a
// spec file or the directory is fatal, so is a dir without devices.
func loadCache(dir string) (*cdi.Cache, error) {
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("loading CDI specs from %s: %w", dir, err)
	}
	var problems []error
	for path, errs := range cache.GetErrors() {
		for _, e := range errs {
			problems = append(problems, fmt.Errorf("%s: %w", path, e))
		}
	}
	for path, e := range cache.GetSpecDirErrors() {
		problems = append(problems, fmt.Errorf("spec dir %s: %w", path, e))
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	if len(cache.ListDevices()) == 0 {
		return nil, fmt.Errorf("no CDI devices found in %s", dir)
	}
	return cache, nil
}

// baseSpec is the smallest OCI spec a runtime would hand to CDI injection.
func baseSpec() *oci.Spec {
	return &oci.Spec{
		Version: oci.Version,
		Process: &oci.Process{
			Args: []string{"/bin/sh"},
			Env:  []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		},
		Root:  &oci.Root{Path: "rootfs"},
		Linux: &oci.Linux{},
	}
}

func inject(cache *cdi.Cache, devices ...string) (*oci.Spec, error) {
	spec := baseSpec()
	if _, err := cache.InjectDevices(spec, devices...); err != nil {
		return nil, fmt.Errorf("injecting %v: %w", devices, err)
	}
	return spec, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "cdi-validate: %v\n", err)
		return 2
	}
	cache, err := loadCache(o.specDir)
	if err != nil {
		fmt.Fprintf(stderr, "cdi-validate: %v\n", err)
		return 1
	}
	all := cache.ListDevices()
	if len(all) < o.minDevices {
		fmt.Fprintf(stderr, "cdi-validate: %d devices defined, want at least %d\n", len(all), o.minDevices)
		return 1
	}
	devices := o.devices
	if o.all {
		devices = append(devices, all...)
	}
	sort.Strings(devices)
	var result any
	if o.each {
		perDevice := map[string]*oci.Spec{}
		for _, d := range devices {
			spec, err := inject(cache, d)
			if err != nil {
				fmt.Fprintf(stderr, "cdi-validate: %v\n", err)
				return 1
			}
			perDevice[d] = spec
		}
		result = perDevice
	} else {
		spec, err := inject(cache, devices...)
		if err != nil {
			fmt.Fprintf(stderr, "cdi-validate: %v\n", err)
			return 1
		}
		result = spec
	}
	data, err := json.MarshalIndent(result, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "cdi-validate: %v\n", err)
		return 1
	}
	data = append(data, '\n')
	if o.output == "" {
		_, err = stdout.Write(data)
	} else {
		err = os.WriteFile(o.output, data, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "cdi-validate: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "cdi-validate: %d devices defined, %d resolved\n", len(all), len(devices))
	return 0
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
