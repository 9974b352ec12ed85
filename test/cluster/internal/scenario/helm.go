package scenario

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

func init() {
	register(Scenario{
		Name: "helm",
		Doc: "deploy/'s objects deleted, the Helm chart installed in their place (helm install, metrics and " +
			"their Service on, the extender off): its pod registers, the node advertises every GPU, the " +
			"Service's endpoint serves gpulet's metrics; helm uninstall leaves nothing behind; installed " +
			"again with the defaults, the extender starts with the TLS material the chart generated and " +
			"serves /metrics only to the generated kube-scheduler certificate, and uninstall removes it " +
			"all; deploy/ is applied again",
		Run: helmScenario,
	})
}

// helmValues turns on what the chart adds to deploy/: the metrics port and
// its headless Service (no ServiceMonitor: the cluster has no
// prometheus-operator). The extender, on by default, is left out of this
// first install: its pods carry gpulet's app.kubernetes.io/name label, and
// the fixture takes the first pod with that label for gpulet's. A second
// install with the defaults checks the extender alone (checkDefaultExtender).
const helmValues = "metrics:\n  enabled: true\n  service:\n    enabled: true\nextender:\n  enabled: false\n"

func helmScenario(t *T) {
	n := t.N
	gpus := len(n.Machine.GPUs)
	old, err := n.GpuletPod(t.Ctx)
	if err != nil || old == nil {
		t.Fatalf("no gpulet pod from deploy/ (%v)", err)
	}
	restored := false
	defer func() {
		if restored {
			return
		}
		// Whatever failed, leave deploy/'s gpulet running for what follows.
		_ = n.HelmUninstall(t.Ctx)
		_ = n.DeleteGpulet(t.Ctx)
		if err := n.DeployGpulet(t.Ctx, node.NoSharingConfig); err != nil {
			t.Errorf("applying deploy/ again: %v", err)
		}
	}()
	if err := n.DeleteGpulet(t.Ctx); err != nil {
		t.Fatalf("deleting deploy/'s objects: %v", err)
	}

	start := time.Now()
	if err := n.HelmInstall(t.Ctx, n.HelmValues(helmValues)); err != nil {
		t.Fatalf("%v", err)
	}
	ds, err := n.Client.AppsV1().DaemonSets("kube-system").Get(t.Ctx, "gpulet", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's DaemonSet: %v", err)
	}
	if ds.Labels["app.kubernetes.io/managed-by"] != "Helm" || ds.Annotations["meta.helm.sh/release-name"] != node.HelmRelease {
		t.Errorf("DaemonSet gpulet is not the Helm release's: labels %v, annotations %v", ds.Labels, ds.Annotations)
	}
	if err := n.WaitGpuletRunning(t.Ctx, string(old.UID)); err != nil {
		t.Fatalf("%v", err)
	}
	if err := n.WaitResources(t.Ctx, map[string]int{"nvidia.com/gpu": gpus}); err != nil {
		t.Fatalf("%v", err)
	}
	t.Figure("helm install -> GPUs advertised", time.Since(start))

	pod, err := n.GpuletPod(t.Ctx)
	if err != nil || pod == nil {
		t.Fatalf("no gpulet pod (%v)", err)
	}
	endpoint := waitMetricsEndpoint(t, pod.Status.PodIP)
	scrapeMetrics(t, endpoint)

	if err := n.HelmUninstall(t.Ctx); err != nil {
		t.Fatalf("%v", err)
	}
	if err := n.WaitGpuletGone(t.Ctx); err != nil {
		t.Fatalf("after helm uninstall: %v", err)
	}
	if _, err := n.Client.CoreV1().Services("kube-system").Get(t.Ctx, "gpulet-metrics", metav1.GetOptions{}); err == nil {
		t.Errorf("Service gpulet-metrics is still there after helm uninstall")
	}
	if c, err := n.HelmReleases(t.Ctx); err != nil || c != 0 {
		t.Errorf("%d release Secret(s) of %s after helm uninstall (%v)", c, node.HelmRelease, err)
	}
	helmDefaultsRound(t)

	restored = true
	if err := n.DeployGpulet(t.Ctx, node.NoSharingConfig); err != nil {
		t.Fatalf("applying deploy/ again: %v", err)
	}
	if err := n.WaitResources(t.Ctx, map[string]int{"nvidia.com/gpu": gpus}); err != nil {
		t.Fatalf("deploy/ again: %v", err)
	}
}

// waitMetricsEndpoint waits until the EndpointSlice of the chart's metrics
// Service lists gpulet's pod (its IP, ready) and returns "IP:port".
func waitMetricsEndpoint(t *T, podIP string) string {
	var endpoint string
	err := t.N.WaitFor(t.Ctx, "the metrics Service's EndpointSlice to list gpulet's pod", 60*time.Second,
		func(ctx context.Context) (bool, error) {
			slices, err := t.N.Client.DiscoveryV1().EndpointSlices("kube-system").List(ctx,
				metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=gpulet-metrics"})
			if err != nil {
				return false, nil
			}
			for _, s := range slices.Items {
				for _, p := range s.Ports {
					if p.Name == nil || *p.Name != "metrics" || p.Port == nil {
						continue
					}
					for _, e := range s.Endpoints {
						ready := e.Conditions.Ready != nil && *e.Conditions.Ready
						for _, a := range e.Addresses {
							if a == podIP && ready {
								endpoint = net.JoinHostPort(a, fmt.Sprint(*p.Port))
								return true, nil
							}
						}
					}
				}
			}
			return false, nil
		})
	if err != nil {
		t.Fatalf("%v\n%s", err, t.N.Kubectl("-n", "kube-system", "get", "endpointslices,services", "-o", "wide"))
	}
	return endpoint
}

// scrapeMetrics reads /metrics from the endpoint, as Prometheus would
// through the Service, and checks that gpulet counted its registration.
func scrapeMetrics(t *T, endpoint string) {
	want := `gpulet_registrations_total{resource="nvidia.com/gpu",result="ok"} 1`
	client := &http.Client{Timeout: 5 * time.Second}
	var last string
	err := t.N.WaitFor(t.Ctx, "gpulet's /metrics through the Service's endpoint", 30*time.Second,
		func(ctx context.Context) (bool, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+endpoint+"/metrics", nil)
			if err != nil {
				return false, err
			}
			resp, err := client.Do(req)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			last = string(body)
			return resp.StatusCode == http.StatusOK && strings.Contains(last, want), nil
		})
	if err != nil {
		t.Errorf("%v; want a line %q; last answer:\n%s", err, want, last)
	}
}

// extenderName names the chart's extender objects for the release gpulet.
const extenderName = "gpulet-extender"

// helmDefaultsRound installs the chart with its defaults (the fixture's
// image and machine only), checks the extender they bring
// (checkDefaultExtender), and uninstalls it: nothing of it may be left.
func helmDefaultsRound(t *T) {
	n := t.N
	if err := n.HelmInstall(t.Ctx, n.HelmValues("")); err != nil {
		t.Fatalf("helm install with the defaults: %v", err)
	}
	checkDefaultExtender(t)
	if err := n.HelmUninstall(t.Ctx); err != nil {
		t.Fatalf("%v", err)
	}
	if err := n.WaitGpuletGone(t.Ctx); err != nil {
		t.Fatalf("after helm uninstall (defaults): %v", err)
	}
	for _, s := range []string{extenderName + "-tls", extenderName + "-scheduler-client"} {
		if _, err := n.Client.CoreV1().Secrets("kube-system").Get(t.Ctx, s, metav1.GetOptions{}); err == nil {
			t.Errorf("Secret %s is still there after helm uninstall", s)
		}
	}
	if _, err := n.Client.AppsV1().Deployments("kube-system").Get(t.Ctx, extenderName, metav1.GetOptions{}); err == nil {
		t.Errorf("Deployment %s is still there after helm uninstall", extenderName)
	}
	if c, err := n.HelmReleases(t.Ctx); err != nil || c != 0 {
		t.Errorf("%d release Secret(s) of %s after helm uninstall (defaults) (%v)", c, node.HelmRelease, err)
	}
}

// checkDefaultExtender: the extender the chart installs by default (no
// Secret made beforehand) starts with the TLS material the chart generated
// and answers as kube-scheduler would need: its serving certificate
// verifies against the generated CA for the Service's name, /healthz is
// open, /metrics is refused without a client certificate and served to the
// generated kube-scheduler certificate. Its pods are not Ready here: the
// node has no kube-proxy, so the in-cluster address of the API server
// (the kubernetes Service) does not reach it and the node cache never
// fills; kube-scheduler is not configured to call this extender either
// (the memory-shares scenario runs the extender as a fixture process).
func checkDefaultExtender(t *T) {
	ctx := t.Ctx
	for _, get := range []func() error{
		func() error {
			_, err := t.N.Client.NetworkingV1().NetworkPolicies("kube-system").Get(ctx, extenderName, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := t.N.Client.CoreV1().Services("kube-system").Get(ctx, extenderName, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := t.N.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, extenderName+"-nodes", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); err != nil {
			t.Errorf("the chart's extender objects: %v", err)
		}
	}
	serving, err := t.N.Client.CoreV1().Secrets("kube-system").Get(ctx, extenderName+"-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the generated serving Secret: %v", err)
	}
	client, err := t.N.Client.CoreV1().Secrets("kube-system").Get(ctx, extenderName+"-scheduler-client", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the generated kube-scheduler Secret: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(serving.Data["ca.crt"]) {
		t.Fatalf("Secret %s-tls: ca.crt holds no certificate", extenderName)
	}
	cert, err := tls.X509KeyPair(client.Data["tls.crt"], client.Data["tls.key"])
	if err != nil {
		t.Fatalf("Secret %s-scheduler-client: %v", extenderName, err)
	}
	ip := waitExtenderPod(t)
	base := "https://" + net.JoinHostPort(ip, "12346")
	tlsConfig := &tls.Config{RootCAs: roots, ServerName: extenderName + ".kube-system.svc"}
	anonymous := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	withCert := tlsConfig.Clone()
	withCert.Certificates = []tls.Certificate{cert}
	scheduler := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: withCert}}
	expectStatus(t, anonymous, base+"/healthz", http.StatusOK)
	expectStatus(t, anonymous, base+"/metrics", http.StatusForbidden)
	expectStatus(t, scheduler, base+"/metrics", http.StatusOK)
}

// waitExtenderPod waits until a pod of the extender's Deployment runs its
// container (the generated Secret mounted, the process started) and
// returns its IP.
func waitExtenderPod(t *T) string {
	var ip string
	err := t.N.WaitFor(t.Ctx, "a pod of Deployment "+extenderName+" to run", 120*time.Second,
		func(ctx context.Context) (bool, error) {
			pods, err := t.N.Client.CoreV1().Pods("kube-system").List(ctx,
				metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=scheduler-extender"})
			if err != nil {
				return false, nil
			}
			for _, p := range pods.Items {
				for _, c := range p.Status.ContainerStatuses {
					if c.State.Running != nil && p.Status.PodIP != "" {
						ip = p.Status.PodIP
						return true, nil
					}
				}
			}
			return false, nil
		})
	if err != nil {
		t.Fatalf("%v\n%s", err, t.N.Kubectl("-n", "kube-system", "describe", "pods", "-l", "app.kubernetes.io/component=scheduler-extender"))
	}
	return ip
}

// expectStatus waits until GET url answers (the server may still be
// starting) and checks the status of that answer.
func expectStatus(t *T, client *http.Client, url string, want int) {
	got := 0
	err := t.N.WaitFor(t.Ctx, "the extender to answer GET "+url, 60*time.Second,
		func(ctx context.Context) (bool, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return false, err
			}
			resp, err := client.Do(req)
			if err != nil {
				return false, nil
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got = resp.StatusCode
			return true, nil
		})
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	if got != want {
		t.Errorf("GET %s: status %d, want %d", url, got, want)
	}
}
