package scenario

import (
	"context"
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
			"their Service on): its pod registers, the node advertises every GPU, the Service's endpoint " +
			"serves gpulet's metrics; helm uninstall leaves nothing behind, and deploy/ is applied again",
		Run: helmScenario,
	})
}

// helmValues turns on what the chart adds to deploy/: the metrics port and
// its headless Service (no ServiceMonitor: the cluster has no
// prometheus-operator).
const helmValues = "metrics:\n  enabled: true\n  service:\n    enabled: true\n"

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
