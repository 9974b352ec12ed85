package main

import (
	"crypto/tls"
	"net/http"
	"os"
	"strings"
	"time"
)

// agentAttacks writes Nodes with the node agent's token of f.ownNode (a
// bound token of the agent's pod: the API server knows the node it runs
// on). Each is a JSON merge patch; the last one, the agent's own kind of
// label on its own Node, is what the agent exists to do and must pass.
func agentAttacks(f *probeFlags) {
	b, err := os.ReadFile(f.tokenFile)
	if err != nil {
		emit(Result{Attack: "agent-token", Error: err.Error()})
		return
	}
	token := strings.TrimSpace(string(b))
	c := &http.Client{Timeout: 20 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	node := func(name string) string { return f.api + "/api/v1/nodes/" + name }
	attacks := []attack{
		{"agent-other-node-annotation", "PATCH", node(f.otherNode),
			[]byte(`{"metadata":{"annotations":{"gpulet.dev/gpu-memory":"{\"gpus\":[]}"}}}`)},
		{"agent-other-node-label", "PATCH", node(f.otherNode),
			[]byte(`{"metadata":{"labels":{"nvidia.com/tenant-attack":"x"}}}`)},
		{"agent-own-taints", "PATCH", node(f.ownNode),
			[]byte(`{"spec":{"taints":[{"key":"tenant-attack","effect":"NoSchedule"}]}}`)},
		{"agent-own-unschedulable", "PATCH", node(f.ownNode), []byte(`{"spec":{"unschedulable":true}}`)},
		{"agent-own-restricted-label", "PATCH", node(f.ownNode),
			[]byte(`{"metadata":{"labels":{"node-restriction.kubernetes.io/tenant-attack":"x"}}}`)},
		{"agent-own-hostname-label", "PATCH", node(f.ownNode),
			[]byte(`{"metadata":{"labels":{"kubernetes.io/hostname":"tenant-attack"}}}`)},
		{"agent-own-other-annotation", "PATCH", node(f.ownNode),
			[]byte(`{"metadata":{"annotations":{"example.com/tenant-attack":"x"}}}`)},
		{"agent-own-status", "PATCH", node(f.ownNode) + "/status",
			[]byte(`{"status":{"capacity":{"nvidia.com/gpu-memory":"100000"}}}`)},
		{"agent-own-gpulet-label", "PATCH", node(f.ownNode),
			[]byte(`{"metadata":{"labels":{"nvidia.com/tenant-attack":"x"}}}`)},
	}
	for _, a := range attacks {
		r := send(c, a.method, a.path, a.body, token)
		r.Attack, r.Client = a.name, "agent-token"
		emit(r)
	}
}
