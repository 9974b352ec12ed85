//go:build extender

package extender

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// securityTests: only kube-scheduler's certificate is served, bind binds
// only what the extender would place and says nothing about other
// namespaces, and idle connections do not keep the scheduler out.
func (c *cluster) securityTests(t *testing.T, ext fwk.Extender, pod *v1.Pod, big *v1.Node) {
	t.Run("only the scheduler's certificate is served", func(t *testing.T) {
		filter := `{"Pod":{"metadata":{"name":"x"}},"NodeNames":["big"]}`
		intruder := makeCert(t, "intruder", c.clientCA, false)
		forged := makeCert(t, "system:kube-scheduler", makeCert(t, "other-ca", nil, false), false)
		cases := []struct {
			name string
			cert *keyPair
			want string
		}{
			{"no certificate", nil, "403 a client certificate is required"},
			{"a name not allowed", intruder, "403 the client certificate's names are not allowed here"},
			// Sent although the server asks for its own CA's (Go's
			// client would send none): the handshake fails.
			{"another CA", forged, "no answer"},
		}
		for _, tc := range cases {
			got := c.postWith(c.httpClientSending(t, tc.cert), "filter", filter)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
			}
		}
		// The probes' paths stay open.
		resp, err := c.httpClientWith(nil).Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", c.extPort))
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("/readyz without a certificate: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
	})

	t.Run("bind binds only what the extender places", func(t *testing.T) {
		ctx := context.Background()
		if _, err := c.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "victim"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.client.CoreV1().ServiceAccounts("victim").Create(ctx, &v1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		victim, err := c.client.CoreV1().Pods("victim").Create(ctx, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "db-0"},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "db", Image: "registry.invalid/db"}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		answer := func(ns, name, uid string) string {
			body, _ := json.Marshal(map[string]string{"PodName": name, "PodNamespace": ns, "PodUID": uid, "Node": "big"})
			got := c.postWith(c.httpClient(), "bind", string(body))
			return strings.ReplaceAll(got, ns+"/"+name, "NS/NAME")
		}
		// The call: a pending pod that asks for no GPU, bound by
		// name without its uid; then with it; then a pod that does not
		// exist. One answer for all.
		noUID := answer("victim", "db-0", "")
		withUID := answer("victim", "db-0", string(victim.UID))
		missing := answer("kube-system", "nope", "0b5e6f7a-0000-4000-8000-000000000000")
		if !strings.Contains(noUID, "400") || !strings.Contains(noUID, "PodUID: missing") {
			t.Errorf("bind without uid: %s", noUID)
		}
		if withUID != missing || !strings.Contains(withUID, "no pending pod with this name and uid") {
			t.Errorf("bind answers differ: %q vs %q", withUID, missing)
		}
		// Through the scheduler's client too.
		err = ext.Bind(&v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: "victim", UID: victim.UID},
			Target: v1.ObjectReference{Kind: "Node", Name: "big"}})
		if err == nil {
			t.Error("the scheduler's client bound a pod that asks for no GPU memory")
		}
		got, err := c.client.CoreV1().Pods("victim").Get(ctx, "db-0", metav1.GetOptions{})
		if err != nil || got.Spec.NodeName != "" {
			t.Errorf("victim/db-0 nodeName = %q, %v", got.Spec.NodeName, err)
		}
		// A GPU-memory pod, to a node that does not exist: "not known",
		// not the API server's answer.
		gpu := c.addPod(t, "p-nowhere", 1)
		if err := ext.Bind(&v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: gpu.Name, Namespace: "default", UID: gpu.UID},
			Target: v1.ObjectReference{Kind: "Node", Name: "no-such-node"}}); err == nil {
			t.Error("bound to a node that does not exist")
		} else if !strings.Contains(err.Error(), "node no-such-node is not known") ||
			strings.Contains(err.Error(), "/api/v1") {
			t.Errorf("bind to a node that does not exist: %v", err)
		}
		// Another namespace's GPU-memory pod that fits on big, but whose
		// node selector excludes it: kube-scheduler would never choose
		// big, so neither does bind, and the Node is not written.
		q := *resource.NewQuantity(1, resource.DecimalSI)
		excluded, err := c.client.CoreV1().Pods("victim").Create(ctx, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "gpu-elsewhere"},
			Spec: v1.PodSpec{NodeSelector: map[string]string{"gpulet.test/pool": "other"},
				Containers: []v1.Container{{Name: "c0", Image: "registry.invalid/pause",
					Resources: v1.ResourceRequirements{Limits: v1.ResourceList{memResource: q},
						Requests: v1.ResourceList{memResource: q}}}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		err = ext.Bind(&v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: excluded.Name, Namespace: "victim", UID: excluded.UID},
			Target: v1.ObjectReference{Kind: "Node", Name: "big"}})
		if err == nil || !strings.Contains(err.Error(), "node big does not match the pod's spec.nodeSelector (label gpulet.test/pool)") {
			t.Errorf("bind past the node selector: %v", err)
		}
		got, err = c.client.CoreV1().Pods("victim").Get(ctx, excluded.Name, metav1.GetOptions{})
		if err != nil || got.Spec.NodeName != "" {
			t.Errorf("victim/%s nodeName = %q, %v", excluded.Name, got.Spec.NodeName, err)
		}
		if n, err := c.client.CoreV1().Nodes().Get(ctx, "big", metav1.GetOptions{}); err != nil ||
			strings.Contains(n.Annotations[pendingAnnot], string(excluded.UID)) {
			t.Errorf("node big: %v, the excluded pod in %s", err, pendingAnnot)
		}
	})

	t.Run("idle connections do not keep the scheduler out", func(t *testing.T) {
		// Far more idle keep-alive connections than the extender has
		// slots (64), without a client certificate, each answered once
		// on /healthz and then held open.
		var conns []*tls.Conn
		defer func() {
			for _, conn := range conns {
				conn.Close()
			}
		}()
		for i := 0; i < 100; i++ {
			conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", c.extPort), &tls.Config{RootCAs: pool(c.extCA)})
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			conns = append(conns, conn)
			if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			buf := make([]byte, 512)
			if n, err := conn.Read(buf); err != nil || !strings.Contains(string(buf[:n]), "200 OK") {
				t.Fatalf("connection %d: %q %v", i, buf[:n], err)
			}
		}
		// kube-scheduler's client, with its 10 s httpTimeout, still gets
		// its answer.
		fit, _, _, err := ext.Filter(pod, nodeInfos(big))
		if err != nil {
			t.Fatalf("filter beside %d idle connections: %v", len(conns), err)
		}
		if len(fit) != 1 {
			t.Errorf("fit = %v", names(fit))
		}
	})

	t.Run("names Kubernetes would refuse are refused", func(t *testing.T) {
		long := strings.Repeat("a", 300)
		for _, body := range []string{
			`{"Pod":{"metadata":{"name":"x"}},"NodeNames":["` + long + `"]}`,
			`{"PodName":"` + long + `","PodNamespace":"default","PodUID":"u","Node":"big"}`,
		} {
			verb := "filter"
			if strings.Contains(body, "PodName") {
				verb = "bind"
			}
			if got := c.postWith(c.httpClient(), verb, body); !strings.HasPrefix(got, "400") ||
				!strings.Contains(got, "is not a valid") {
				t.Errorf("%s with a 300-character name: %.200s", verb, got)
			}
		}
	})
}

// httpClientSending presents `cert` (none when nil) whatever CAs the
// server names.
func (c *cluster) httpClientSending(t *testing.T, cert *keyPair) *http.Client {
	t.Helper()
	client := c.httpClientWith(nil)
	if cert == nil {
		return client
	}
	p, err := tls.X509KeyPair(cert.cert, cert.key)
	if err != nil {
		t.Fatal(err)
	}
	client.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate =
		func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &p, nil }
	return client
}

// postWith posts to a verb: "<code> <body>", or "no answer: <error>".
func (c *cluster) postWith(client *http.Client, verb, body string) string {
	resp, err := client.Post(c.extURL+"/"+verb, "application/json", strings.NewReader(body))
	if err != nil {
		return "no answer: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}
