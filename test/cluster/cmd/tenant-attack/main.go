// Command tenant-attack is the program of the tenant-attacks scenario's
// pods (docs/testing.md): a tenant who owns one pod, and the node agent's
// token of one GPU node, attacks gpulet extender and the Node objects.
//
//	tenant-attack probe -extender HOST:PORT -api URL -token-file F ...
//	tenant-attack flood -extender HOST:PORT [-conns N]
//
// probe tries every attack once and prints one JSON line per attempt
// (what was sent, by which client, and what came back), then a line with
// attack "done". It judges nothing: the scenario does, and checks the
// effects on the API server besides. flood holds idle connections to the
// extender, opening a new one whenever the extender closes one, and
// prints a status line every second until it is stopped.
//
// Built static (CGO_ENABLED=0) into the fixture's tenant-attack image;
// standard library only.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

// Result is one attempt, as the scenario reads it back from the pod's log.
type Result struct {
	Attack string `json:"attack"`
	// Client: "no-cert" (TLS without a client certificate), "other-ca"
	// (a certificate of a CA made here, named as kube-scheduler's), or
	// "agent-token" (the node agent's service-account token).
	Client string `json:"client,omitempty"`
	Status int    `json:"status"`          // HTTP status; 0: no HTTP answer
	Error  string `json:"error,omitempty"` // why there was no HTTP answer
	Body   string `json:"body,omitempty"`  // the answer's start
}

// FloodStatus is flood's line: connections open now, opened in all, and
// closed by the extender.
type FloodStatus struct {
	Flood  string `json:"flood"`
	Open   int64  `json:"open"`
	Dialed int64  `json:"dialed"`
	Closed int64  `json:"closed"`
}

func emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tenant-attack:", err)
		return
	}
	os.Stdout.Write(append(b, '\n'))
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tenant-attack probe|flood [flags]")
		os.Exit(2)
	}
	var code int
	switch os.Args[1] {
	case "probe":
		code = probe(os.Args[2:])
	case "flood":
		code = flood(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "tenant-attack: unknown mode", os.Args[1])
		code = 2
	}
	os.Exit(code)
}
