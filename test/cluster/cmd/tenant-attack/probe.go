package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// victim is a pending pod of another namespace: namespace/name/uid.
type victim struct{ ns, name, uid string }

type probeFlags struct {
	extender, api, tokenFile   string
	ownNode, otherNode, absent string
	certDir                    string
	victims                    []victim
}

func parseProbeFlags(args []string) (*probeFlags, error) {
	f := &probeFlags{}
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.StringVar(&f.extender, "extender", "", "the extender's host:port")
	fs.StringVar(&f.api, "api", "", "the API server's URL")
	fs.StringVar(&f.tokenFile, "token-file", "", "the node agent's service-account token")
	fs.StringVar(&f.ownNode, "own-node", "", "the node whose agent's token this is")
	fs.StringVar(&f.otherNode, "other-node", "", "another node")
	fs.StringVar(&f.absent, "absent-node", "no-such-node", "a node that does not exist")
	fs.StringVar(&f.certDir, "cert-dir", "", "kube-scheduler's client certificate, stolen (tls.crt, tls.key)")
	victims := fs.String("victims", "", "comma-separated namespace/name/uid of pending pods")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for _, v := range strings.Split(*victims, ",") {
		p := strings.Split(v, "/")
		if len(p) != 3 {
			return nil, fmt.Errorf("-victims: %q is not namespace/name/uid", v)
		}
		f.victims = append(f.victims, victim{p[0], p[1], p[2]})
	}
	if f.extender == "" || f.api == "" || f.tokenFile == "" || f.ownNode == "" || f.otherNode == "" {
		return nil, fmt.Errorf("-extender, -api, -token-file, -own-node and -other-node are required")
	}
	return f, nil
}

func probe(args []string) int {
	f, err := parseProbeFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tenant-attack probe:", err)
		return 2
	}
	other, err := otherCACert()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tenant-attack probe: a certificate of another CA:", err)
		return 1
	}
	type client struct {
		name string
		c    *http.Client
	}
	clients := []client{{"no-cert", tlsClient(nil)}, {"other-ca", tlsClient(other)}}
	if f.certDir != "" {
		stolen, err := tls.LoadX509KeyPair(filepath.Join(f.certDir, "tls.crt"), filepath.Join(f.certDir, "tls.key"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "tenant-attack probe: -cert-dir:", err)
			return 1
		}
		clients = append(clients, client{"scheduler-cert", tlsClient(&stolen)})
	}
	for _, c := range clients {
		for _, a := range extenderAttacks(f) {
			r := send(c.c, a.method, "https://"+f.extender+a.path, a.body, "")
			r.Attack, r.Client = a.name, c.name
			emit(r)
		}
	}
	agentAttacks(f)
	emit(Result{Attack: "done"})
	return 0
}

// tlsClient trusts any server (the attacker does not care whose it is)
// and presents cert, whatever CAs the server names; nil: no certificate.
func tlsClient(cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{InsecureSkipVerify: true}
	if cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return &http.Client{Timeout: 20 * time.Second,
		Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
}

// send makes one request and reports its answer (or why there was none).
func send(c *http.Client, method, url string, body []byte, token string) Result {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return Result{Error: err.Error()}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(method, "PATCH") {
		req.Method = "PATCH"
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return Result{Error: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 400))
	return Result{Status: resp.StatusCode, Body: string(b)}
}

type attack struct {
	name, method, path string
	body               []byte
}

// podJSON is a pod as kube-scheduler sends it to filter and prioritize,
// with containers asking for units of GPU memory each.
func podJSON(v victim, units ...int) map[string]any {
	var containers []any
	for i, u := range units {
		containers = append(containers, map[string]any{"name": fmt.Sprintf("c%d", i),
			"resources": map[string]any{"limits": map[string]string{"nvidia.com/gpu-memory": fmt.Sprint(u)}}})
	}
	return map[string]any{"metadata": map[string]string{"name": v.name, "namespace": v.ns, "uid": v.uid},
		"spec": map[string]any{"containers": containers}}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func bindBody(ns, name, uid, node string) []byte {
	return mustJSON(map[string]string{"PodName": name, "PodNamespace": ns, "PodUID": uid, "Node": node})
}

// extenderAttacks are the calls a tenant makes to the extender: the
// probe's path (which must stay open: it shows the extender is reached),
// reading its state, binding other namespaces' pods, oversized requests,
// and a filter with forged container sizes followed by a bind.
func extenderAttacks(f *probeFlags) []attack {
	const verbs = "/gpu-memory/"
	gpu := f.victims[len(f.victims)-1]
	filterArgs := mustJSON(map[string]any{"Pod": podJSON(gpu, 1), "NodeNames": []string{f.ownNode}})
	long := strings.Repeat("a", 300)
	many := make([]string, 20000)
	for i := range many {
		many[i] = fmt.Sprintf("node-%d", i)
	}
	out := []attack{
		{"readyz", "GET", "/readyz", nil},
		{"metrics", "GET", "/metrics", nil},
		{"filter", "POST", verbs + "filter", filterArgs},
		{"prioritize", "POST", verbs + "prioritize", filterArgs},
	}
	for _, v := range f.victims {
		out = append(out, attack{"bind-" + v.name, "POST", verbs + "bind", bindBody(v.ns, v.name, v.uid, f.ownNode)})
	}
	return append(out,
		attack{"bind-absent-node", "POST", verbs + "bind", bindBody(gpu.ns, gpu.name, gpu.uid, f.absent)},
		attack{"filter-long-node-name", "POST", verbs + "filter",
			mustJSON(map[string]any{"Pod": podJSON(gpu, 1), "NodeNames": []string{long}})},
		attack{"bind-long-pod-name", "POST", verbs + "bind", bindBody(gpu.ns, long, gpu.uid, f.ownNode)},
		attack{"filter-20000-nodes", "POST", verbs + "filter",
			mustJSON(map[string]any{"Pod": podJSON(gpu, 1), "NodeNames": many})},
		attack{"prioritize-many-containers", "POST", verbs + "prioritize",
			mustJSON(map[string]any{"Pod": podJSON(gpu, make([]int, 5000)...), "NodeNames": []string{f.ownNode}})},
		attack{"poison-filter", "POST", verbs + "filter", filterArgs},
		attack{"poison-bind", "POST", verbs + "bind", bindBody(gpu.ns, gpu.name, gpu.uid, f.ownNode)},
	)
}

// otherCACert is a client certificate named as kube-scheduler's, signed
// by a CA made here.
func otherCACert() (*tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tenant-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "system:kube-scheduler"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key}, nil
}
