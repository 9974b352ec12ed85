//go:build extender

package extender

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

const (
	memResource  = "nvidia.com/gpu-memory"
	adminToken   = "extender-test-admin-token"
	nodeAnnot    = "gpulet.dev/gpu-memory"
	pendingAnnot = "gpulet.dev/gpu-memory-pending"
)

// cluster is etcd + kube-apiserver + `gpulet extender` (HTTPS).
type cluster struct {
	dir       string
	client    kubernetes.Interface
	procs     []*process
	extURL    string // https://127.0.0.1:<port>/gpu-memory
	extCA     []byte
	schedCert tls.Certificate // kube-scheduler's, of the extender's client CA
	scheduler *keyPair        // the same as PEM
	clientCA  *keyPair
	extender  *process
	extPort   int
	apiServer string
}

func setUp(t *testing.T) *cluster {
	gpulet := mustEnv(t, "GPULET_BINARY")
	k8sBin := mustEnv(t, "GPULET_K8S_BIN")
	dir, err := os.MkdirTemp("/tmp", "gpulet-ext-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c := &cluster{dir: dir}

	ca := makeCert(t, "ext-test-ca", nil, false)
	serving := makeCert(t, "apiserver", ca, true)
	saKey := makeCert(t, "sa", nil, false)
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := writeFile(t, dir, "ca.crt", ca.cert)
	etcdPort, peerPort, apiPort := freePort(t), freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd := start(t, filepath.Join(dir, "etcd.log"), "/usr/bin/etcd",
		"--name", "t", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "t="+peerURL, "--listen-metrics-urls", "",
		"--unsafe-no-fsync")
	api := start(t, filepath.Join(dir, "apiserver.log"), filepath.Join(k8sBin, "kube-apiserver"),
		"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1",
		"--advertise-address", "127.0.0.1", "--secure-port", fmt.Sprint(apiPort),
		"--service-cluster-ip-range", "10.96.0.0/24", "--authorization-mode", "RBAC",
		"--client-ca-file", caFile,
		"--tls-cert-file", writeFile(t, dir, "apiserver.crt", serving.cert),
		"--tls-private-key-file", writeFile(t, dir, "apiserver.key", serving.key),
		"--token-auth-file", writeFile(t, dir, "tokens.csv",
			[]byte(adminToken+",test-admin,1,\"system:masters\"\n")),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", writeFile(t, dir, "sa.pub",
			pemBlock("PUBLIC KEY", saPub)),
		"--service-account-signing-key-file", writeFile(t, dir, "sa.key", saKey.key),
		"--cert-dir", filepath.Join(dir, "generated"), "--profiling=false")
	c.procs = []*process{etcd, api}
	c.apiServer = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	cfg := &rest.Config{Host: c.apiServer, BearerToken: adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.cert}}
	c.client, err = kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the API server", c.procs, func() bool {
		body, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err == nil && string(body) == "ok"
	})
	_, err = c.client.CoreV1().ServiceAccounts("default").Create(context.Background(),
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}

	// The shipped RBAC: the extender runs with its service account's token.
	applyManifests(t, c.client, "../../../../deploy/extender/extender.yaml")
	token := serviceAccountToken(t, c.client)

	extCA := makeCert(t, "extender-ca", nil, false)
	extServing := makeCert(t, "extender", extCA, true)
	c.extCA = extCA.cert
	// Mutual TLS as deploy/extender/extender.yaml has it: the scheduler's
	// client certificate, of a CA of its own.
	c.clientCA = makeCert(t, "extender-client-ca", nil, false)
	c.scheduler = makeCert(t, "system:kube-scheduler", c.clientCA, false)
	if c.schedCert, err = tls.X509KeyPair(c.scheduler.cert, c.scheduler.key); err != nil {
		t.Fatal(err)
	}
	c.extPort = freePort(t)
	c.extender = start(t, filepath.Join(dir, "extender.log"), gpulet, "extender",
		"--address", fmt.Sprintf("127.0.0.1:%d", c.extPort),
		"--kubeconfig", writeFile(t, dir, "kubeconfig", kubeconfig(c.apiServer, ca.cert, token)),
		"--tls-cert-file", writeFile(t, dir, "ext.crt", extServing.cert),
		"--tls-key-file", writeFile(t, dir, "ext.key", extServing.key),
		"--client-ca-file", writeFile(t, dir, "client-ca.crt", c.clientCA.cert),
		"--allowed-client-names", "system:kube-scheduler",
		// Idle connections are closed only to make room: the flood test
		// shows that they give way, not that they time out.
		"--idle-timeout", "600",
		"--request-timeout", "2")
	c.procs = append(c.procs, c.extender)
	c.extURL = fmt.Sprintf("https://127.0.0.1:%d/gpu-memory", c.extPort) // as scheduler-config.yaml
	waitFor(t, "the extender's node cache", c.procs, func() bool {
		code, _ := c.get(t, "/readyz")
		return code == 200
	})
	return c
}

// httpClient presents kube-scheduler's client certificate.
func (c *cluster) httpClient() *http.Client {
	return c.httpClientWith([]tls.Certificate{c.schedCert})
}

func (c *cluster) httpClientWith(certs []tls.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.extCA)
	return &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
}

func (c *cluster) get(t *testing.T, path string) (int, string) {
	resp, err := c.httpClient().Get(fmt.Sprintf("https://127.0.0.1:%d%s", c.extPort, path))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (c *cluster) post(t *testing.T, verb, body string) (int, string) {
	t.Helper()
	resp, err := c.httpClient().Post(c.extURL+"/"+verb, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// extenderClient is kube-scheduler's HTTPExtender made from the shipped
// configuration (deploy/extender/scheduler-config.yaml), pointed at the
// test's extender and CA.
func (c *cluster) extenderClient(t *testing.T, nodeCache bool) fwk.Extender {
	t.Helper()
	cfg := schedulerExtender(t, "../../../../deploy/extender/scheduler-config.yaml")
	u, err := url.Parse(cfg.URLPrefix)
	if err != nil {
		t.Fatal(err)
	}
	cfg.URLPrefix = fmt.Sprintf("https://127.0.0.1:%d%s", c.extPort, u.Path)
	if cfg.TLSConfig == nil || cfg.TLSConfig.CertFile == "" || cfg.TLSConfig.KeyFile == "" {
		t.Fatalf("scheduler-config.yaml: tlsConfig has no client certificate: %+v", cfg.TLSConfig)
	}
	cfg.TLSConfig = &schedulerapi.ExtenderTLSConfig{CAData: c.extCA,
		CertData: c.scheduler.cert, KeyData: c.scheduler.key}
	cfg.NodeCacheCapable = nodeCache
	if !cfg.EnableHTTPS || cfg.BindVerb != "bind" || cfg.FilterVerb != "filter" ||
		cfg.PrioritizeVerb != "prioritize" || cfg.Weight != 5 {
		t.Fatalf("scheduler-config.yaml: unexpected extender %+v", cfg)
	}
	ext, err := scheduler.NewHTTPExtender(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !ext.IsInterested(&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{
		Resources: v1.ResourceRequirements{Limits: v1.ResourceList{
			memResource: *resource.NewQuantity(1, resource.DecimalSI)}}}}}}) {
		t.Fatal("the extender is not interested in a pod requesting " + memResource)
	}
	return ext
}

// gpus: units and used per GPU.
func (c *cluster) addNode(t *testing.T, name string, gpus ...[2]int) *v1.Node {
	t.Helper()
	type gpu struct {
		UUID    string `json:"uuid"`
		Index   int    `json:"index"`
		Units   int    `json:"units"`
		Used    int    `json:"used"`
		Healthy bool   `json:"healthy"`
	}
	mem := map[string]any{"v": 1, "resource": memResource, "unitMiB": 1024,
		"observed": "2026-11-24T05:00:00Z", "pods": []any{}}
	list := []gpu{}
	for i, g := range gpus {
		list = append(list, gpu{fmt.Sprintf("GPU-%s-%d", name, i), i, g[0], g[1], true})
	}
	mem["gpus"] = list
	annotations := map[string]string{}
	if len(gpus) > 0 {
		b, _ := json.Marshal(mem)
		annotations[nodeAnnot] = string(b)
	}
	node, err := c.client.CoreV1().Nodes().Create(context.Background(), &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The TaintNodesByCondition admission plugin taints a new Node
	// node.kubernetes.io/not-ready:NoSchedule until the node lifecycle
	// controller sees its kubelet Ready, and bind, like kube-scheduler,
	// refuses an untolerated taint. There is neither a kubelet nor that
	// controller here: do what the controller would.
	if len(node.Spec.Taints) > 0 {
		node.Spec.Taints = nil
		if node, err = c.client.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return node
}

func (c *cluster) addPod(t *testing.T, name string, units ...int64) *v1.Pod {
	t.Helper()
	var containers []v1.Container
	for i, u := range units {
		q := *resource.NewQuantity(u, resource.DecimalSI)
		containers = append(containers, v1.Container{
			Name: fmt.Sprintf("c%d", i), Image: "registry.invalid/pause",
			Resources: v1.ResourceRequirements{
				Limits:   v1.ResourceList{memResource: q},
				Requests: v1.ResourceList{memResource: q}}})
	}
	pod, err := c.client.CoreV1().Pods("default").Create(context.Background(), &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.PodSpec{Containers: containers}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func nodeInfos(nodes ...*v1.Node) []fwk.NodeInfo {
	var out []fwk.NodeInfo
	for _, n := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		out = append(out, ni)
	}
	return out
}

func names(list []fwk.NodeInfo) []string {
	var out []string
	for _, n := range list {
		out = append(out, n.Node().Name)
	}
	return out
}

func TestSchedulerExtenderClient(t *testing.T) {
	c := setUp(t)
	big := c.addNode(t, "big", [2]int{16, 0}, [2]int{16, 0})
	busy := c.addNode(t, "busy", [2]int{16, 6}, [2]int{16, 8})
	cpu := c.addNode(t, "cpu")
	ext := c.extenderClient(t, true)
	pod := c.addPod(t, "p12", 12)

	// The node watch: nodes created after the extender started are known
	// once their events arrived.
	waitFor(t, "the new nodes in the extender's cache", c.procs, func() bool {
		_, failed, _, err := ext.Filter(pod, nodeInfos(big, busy, cpu))
		return err == nil && !strings.Contains(failed["busy"], "not in the")
	})

	t.Run("filter", func(t *testing.T) {
		fit, failed, unresolvable, err := ext.Filter(pod, nodeInfos(big, busy, cpu))
		if err != nil {
			t.Fatal(err)
		}
		if got := names(fit); len(got) != 1 || got[0] != "big" {
			t.Errorf("fit = %v, want [big]", got)
		}
		want := "no single GPU on node busy has 12 GiB free (largest free: 10 GiB on GPU-busy-0)"
		if failed["busy"] != want {
			t.Errorf("FailedNodes[busy] = %q, want %q", failed["busy"], want)
		}
		if !strings.Contains(unresolvable["cpu"], "has no gpulet.dev/gpu-memory annotation") {
			t.Errorf("FailedAndUnresolvableNodes[cpu] = %q", unresolvable["cpu"])
		}
	})

	t.Run("filter without node cache", func(t *testing.T) {
		plain := c.extenderClient(t, false)
		fit, _, _, err := plain.Filter(pod, nodeInfos(big, busy))
		if err != nil {
			t.Fatal(err)
		}
		if got := names(fit); len(got) != 1 || got[0] != "big" {
			t.Errorf("fit = %v, want [big]", got)
		}
	})

	t.Run("prioritize", func(t *testing.T) {
		small := c.addPod(t, "p4", 4)
		list, weight, err := ext.Prioritize(small, nodeInfos(big, busy))
		if err != nil {
			t.Fatal(err)
		}
		if weight != 5 {
			t.Errorf("weight = %d", weight)
		}
		scores := map[string]int64{}
		for _, hp := range *list {
			scores[hp.Host] = hp.Score
		}
		// binpack: busy ends fuller (18/32) than big (4/32).
		if scores["busy"] <= scores["big"] {
			t.Errorf("binpack scores %v: busy should beat big", scores)
		}
	})

	t.Run("bind", func(t *testing.T) {
		err := ext.Bind(&v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
			Target:     v1.ObjectReference{Kind: "Node", Name: "big"}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.client.CoreV1().Pods("default").Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil || got.Spec.NodeName != "big" {
			t.Fatalf("pod nodeName = %q, %v", got.Spec.NodeName, err)
		}
		node, err := c.client.CoreV1().Nodes().Get(context.Background(), "big", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(node.Annotations[pendingAnnot], string(pod.UID)) {
			t.Errorf("pending annotation %q lacks the pod", node.Annotations[pendingAnnot])
		}
		// The pending pod now takes 12 of big's 32 units: a 16 fits on the
		// other GPU, a second 12 and then a 16 do not both.
		second := c.addPod(t, "p16", 16)
		fit, _, _, err := ext.Filter(second, nodeInfos(big))
		if err != nil || len(fit) != 1 {
			t.Fatalf("16 beside a pending 12 on 2x16: fit %v, %v", names(fit), err)
		}
		third := c.addPod(t, "p16b", 16, 16)
		_, failed, _, err := ext.Filter(third, nodeInfos(big))
		if err != nil || !strings.Contains(failed["big"], "1 pending container(s) (12 GiB)") {
			t.Errorf("FailedNodes[big] = %q, %v", failed["big"], err)
		}
	})

	t.Run("bind refused when it no longer fits", func(t *testing.T) {
		huge := c.addPod(t, "p20", 20)
		err := ext.Bind(&v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: huge.Name, Namespace: "default", UID: huge.UID},
			Target:     v1.ObjectReference{Kind: "Node", Name: "big"}})
		// Told so, without the sizes (the caller may not be the pod's).
		if err == nil || !strings.Contains(err.Error(), "the pod no longer fits on node big") ||
			strings.Contains(err.Error(), "GiB") {
			t.Errorf("bind error = %v", err)
		}
	})

	t.Run("concurrent binds never double-book", func(t *testing.T) {
		one := c.addNode(t, "one", [2]int{16, 0})
		waitFor(t, "node one in the cache", c.procs, func() bool {
			probe := c.addPodOnce(t, "probe", 1)
			fit, _, _, err := ext.Filter(probe, nodeInfos(one))
			return err == nil && len(fit) == 1
		})
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := 0; i < 8; i++ {
			p := c.addPod(t, fmt.Sprintf("c4-%d", i), 4)
			wg.Add(1)
			go func(i int, p *v1.Pod) {
				defer wg.Done()
				errs[i] = ext.Bind(&v1.Binding{
					ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: "default", UID: p.UID},
					Target:     v1.ObjectReference{Kind: "Node", Name: "one"}})
			}(i, p)
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else if !strings.Contains(err.Error(), "no longer fits") {
				t.Errorf("bind error %v", err)
			}
		}
		if ok != 4 {
			t.Errorf("%d binds of 4 units got onto one 16-unit GPU, want 4", ok)
		}
	})

	t.Run("malformed requests are 400 naming the field", func(t *testing.T) {
		cases := []struct{ verb, body, want string }{
			{"filter", `{`, "filter: the request body is not JSON"},
			{"filter", `{"NodeNames":["big"]}`, "filter: ExtenderArgs.Pod: missing"},
			{"prioritize", `{"Pod":{},"NodeNames":[7]}`, "ExtenderArgs.NodeNames[0]: not a string"},
			{"bind", `{"PodName":"x"}`, "bind: ExtenderBindingArgs.Node: missing"},
		}
		for _, tc := range cases {
			code, body := c.post(t, tc.verb, tc.body)
			if code != 400 || !strings.Contains(body, tc.want) {
				t.Errorf("%s %s: %d %q, want 400 %q", tc.verb, tc.body, code, body, tc.want)
			}
		}
	})

	t.Run("keys match ignoring case", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"pod": pod, "nodenames": []string{"big", "busy"}})
		code, out := c.post(t, "filter", string(body))
		if code != 200 || !strings.Contains(out, `"FailedNodes":{"busy"`) {
			t.Errorf("lower-case keys: %d %s", code, out)
		}
	})

	t.Run("a stalled client is cut off at the request deadline", func(t *testing.T) {
		conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", c.extPort),
			&tls.Config{RootCAs: pool(c.extCA), Certificates: []tls.Certificate{c.schedCert}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte("POST /gpu-memory/filter HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")); err != nil {
			t.Fatal(err)
		}
		// No deadline of our own: the server closes the connection (EOF)
		// once its 2 s request timeout passed.
		b, err := io.ReadAll(conn)
		if len(b) != 0 {
			t.Errorf("answer to a stalled request: %q (%v)", b, err)
		}
	})

	t.Run("a body above the limit is 413", func(t *testing.T) {
		code, _ := c.post(t, "filter", `{"Pod":{},"NodeNames":[`+strings.Repeat(`"n",`, 1<<20)+`"n"]}`)
		if code != 413 {
			t.Errorf("5 MiB body: %d, want 413", code)
		}
	})

	t.Run("an extender that does not answer in time fails the call", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				defer conn.Close() // holds the connection without answering
			}
		}()
		silent, err := scheduler.NewHTTPExtender(&schedulerapi.Extender{
			URLPrefix: "http://" + l.Addr().String(), FilterVerb: "filter",
			HTTPTimeout: metav1.Duration{Duration: 500 * time.Millisecond},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := silent.Filter(pod, nodeInfos(big)); err == nil ||
			!strings.Contains(err.Error(), "Client.Timeout") {
			t.Errorf("silent extender: %v", err)
		}
	})

	c.securityTests(t, ext, pod, big)

	code, metrics := c.get(t, "/metrics")
	if code != 200 || !strings.Contains(metrics, `gpulet_extender_binds_total{result="ok"}`) {
		t.Errorf("/metrics: %d\n%s", code, metrics)
	}
	// The API client's requests, as client-go names them: the node and pod
	// lists at least, answered 200.
	for _, want := range []string{
		`rest_client_requests_total{code="200",method="GET",host="`,
		`rest_client_request_duration_seconds_bucket{verb="GET",host="`,
		`rest_client_request_duration_seconds_count{verb="GET",host="`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s\n%s", want, metrics)
		}
	}
}

func (c *cluster) addPodOnce(t *testing.T, name string, units int64) *v1.Pod {
	if p, err := c.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{}); err == nil {
		return p
	}
	return c.addPod(t, name, units)
}

func pool(ca []byte) *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(ca)
	return p
}
