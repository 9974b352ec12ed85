package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

func init() {
	register(Scenario{
		Name: "api-outage-dra", Machine: draMachine, DRA: true,
		Doc: "gpulet dra while kube-apiserver is stopped (SIGSTOP), killed and restarted, and cut off by " +
			"iptables, with pods of one-GPU claims created and deleted all along: no NodePrepareResources " +
			"left to the kubelet's own deadline, no device allocated or prepared for two claims, every pod " +
			"wanted runs once the API server is back, the slices unchanged, every claim unprepared " +
			"(--outage-long: 1 s to 2 min each)",
		Run: apiOutageDraScenario,
	})
}

const (
	outageTemplate = "outage-gpu"
	// The kubelet gives NodePrepareResources 45 s (docs/dra.md).
	draCallDeadline = 45 * time.Second
)

var (
	draFailedCall = regexp.MustCompile(`] NodePrepareResources: `)
	draLateAnswer = regexp.MustCompile(`] NodePrepareResources: .*before the call's deadline`)
)

func draPrepareCalls(code string) func(string) histo {
	return func(text string) histo {
		return readHisto(text, "dra_grpc_operations_duration_seconds", func(l map[string]string) bool {
			return l["driver_name"] == node.DRADriver && strings.HasSuffix(l["method_name"], "/NodePrepareResources") &&
				(code == "" || l["grpc_status_code"] == code)
		})
	}
}

func apiOutageDraScenario(t *T) {
	start := time.Now()
	createTemplate(t, outageTemplate, claimRequest{class: node.DRADriver, count: 1})
	defer deleteTemplate(t, outageTemplate)
	defer deleteOutagePods(t)
	d := &draOutage{slices: sliceNames(t), doubleBooked: map[string]bool{}, log: t.N.Cfg.Log}
	check := func(ctx context.Context) []string { return draOutageViolations(ctx, t.N, d.sawDoubleBooking) }
	c := startChurn(t.Ctx, t.N, 4, func(name string) *corev1.Pod { return claimPod(name, outageTemplate, "") }, check)
	defer c.stop()
	d.c = c
	runOutages(t, &outageTarget{
		name:     "api-outage-dra",
		churn:    c,
		callName: "NodePrepareResources",
		calls:    draPrepareCalls(""),
		lateCalls: func(m0, m1, log string, since time.Time) error {
			timeouts := draPrepareCalls("DeadlineExceeded")
			kubelet := int(timeouts(m1).minus(timeouts(m0)).count)
			answered := 0
			for _, line := range strings.Split(log, "\n") {
				if at, ok := gpuletLogTime(line, time.Now()); ok && !at.Before(since) && draLateAnswer.MatchString(line) {
					answered++
				}
			}
			if kubelet > answered {
				return fmt.Errorf("%d NodePrepareResources call(s) ended DeadlineExceeded in the kubelet, gpulet "+
					"answered %d itself before the deadline: a call was left to the kubelet's own %s", kubelet, answered, draCallDeadline)
			}
			return nil
		},
		failedCall: draFailedCall,
		margin:     draCallDeadline + 10*time.Second,
		// The kubelet retries a failed prepare; no pod may fail.
		failureOK: func(string) bool { return false },
		before:    d.before,
		after:     d.after,
	})
	c.stop()
	deleteOutagePods(t)
	c.waitGone(t)
	d.waitUnprepared(t, "after the outages")
	d.mu.Lock()
	t.FigureText("api-outage-dra: devices the scheduler allocated to two claims at once (gpulet prepared one)", fmt.Sprint(len(d.doubleBooked)))
	d.mu.Unlock()
	t.Figure("api-outage-dra: total", time.Since(start))
}

type draOutage struct {
	c      *churn
	slices []string
	gpulet *gpulet

	log func(format string, args ...any)
	mu  sync.Mutex
	// "<device> <claim> <claim>" of each double booking seen.
	doubleBooked map[string]bool
}

// sawDoubleBooking records a device the API server shows allocated to two
// claims: kube-scheduler can do it when the answer to its allocation write
// is lost (the API server killed under it: "claim ... got allocated
// elsewhere in the meantime" in its log). Kubernetes' fault, not gpulet's;
// gpulet's part, checked in draOutageViolations, is to prepare the device
// for one of them only.
func (d *draOutage) sawDoubleBooking(what string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.doubleBooked[what] {
		d.doubleBooked[what] = true
		d.log("api-outage-dra: the scheduler allocated %s", what)
	}
}

func sliceNames(t *T) []string {
	devices, err := t.N.SliceDevices(t.Ctx)
	if err != nil {
		t.Fatalf("list ResourceSlices: %v", err)
	}
	var out []string
	for name := range devices {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func (d *draOutage) before(t *T) {
	d.gpulet = currentGpulet(t)
}

func (d *draOutage) after(t *T, label string) {
	d.gpulet.expectSame(t)
	if now := sliceNames(t); strings.Join(now, ",") != strings.Join(d.slices, ",") {
		t.Errorf("%s: the ResourceSlices hold %v, before the outages %v", label, now, d.slices)
	}
	d.c.pause()
	d.c.waitGone(t)
	d.waitUnprepared(t, label)
	d.c.resume()
}

// waitUnprepared waits until gpulet's checkpoint holds no claim of the
// churn and every claim CDI spec left on the node is one it holds.
func (d *draOutage) waitUnprepared(t *T, label string) {
	var why string
	err := t.N.WaitFor(t.Ctx, "gpulet to unprepare the churn's claims", outageRunLimit, func(context.Context) (bool, error) {
		held, err := readDraCheckpoint()
		if err != nil {
			why = err.Error()
			return false, nil
		}
		for _, c := range held {
			if strings.HasPrefix(c.Name, "outage-") {
				why = "the checkpoint holds claim " + c.Name
				return false, nil
			}
		}
		specs, _ := filepath.Glob(filepath.Join(node.DynamicCDIDir, "k8s."+node.DRADriver+"-claim_*.json"))
		for _, s := range specs {
			uid := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(s), "k8s."+node.DRADriver+"-claim_"), ".json")
			if _, ok := held[uid]; !ok {
				why = "CDI spec " + s + " of a claim the checkpoint does not hold"
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("%s: %v (last: %s)", label, err, why)
	}
}

type preparedClaim struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Devices   []struct {
		Pool   string `json:"pool"`
		Device string `json:"device"`
	} `json:"devices"`
}

// readDraCheckpoint reads gpulet dra's checkpoint: claim UID -> claim.
func readDraCheckpoint() (map[string]preparedClaim, error) {
	b, err := os.ReadFile(gpuletCheckpoint)
	if os.IsNotExist(err) {
		return map[string]preparedClaim{}, nil
	}
	if err != nil {
		return nil, err
	}
	var cp struct {
		Claims map[string]preparedClaim `json:"claims"`
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("%s: %w", gpuletCheckpoint, err)
	}
	return cp.Claims, nil
}

// draOutageViolations: no device of this node is held prepared by gpulet
// for two claims, and each claim gpulet holds prepared has the devices the
// API server allocated it. A device the API server shows allocated to two
// claims goes to `doubleBooked` (see sawDoubleBooking).
func draOutageViolations(ctx context.Context, n *node.Node, doubleBooked func(string)) []string {
	claims, err := n.Client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil // the API server is away
	}
	held, err := readDraCheckpoint()
	if err != nil {
		return nil // being replaced; read at the next look
	}
	var bad []string
	allocated := map[string][]string{} // claim UID -> devices
	owner := map[string]string{}
	for _, c := range claims.Items {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != node.DRADriver || r.Pool != node.NodeName {
				continue
			}
			if other, dup := owner[r.Device]; dup {
				doubleBooked(fmt.Sprintf("device %s to claims %s and %s", r.Device, other, c.Name))
			}
			owner[r.Device] = c.Name
			allocated[string(c.UID)] = append(allocated[string(c.UID)], r.Device)
		}
	}
	prepared := map[string]string{}
	for uid, c := range held {
		var devs []string
		for _, d := range c.Devices {
			if other, dup := prepared[d.Device]; dup {
				bad = append(bad, fmt.Sprintf("gpulet holds device %s prepared for claims %s and %s", d.Device, other, c.Name))
			}
			prepared[d.Device] = c.Name
			devs = append(devs, d.Device)
		}
		if want, ok := allocated[uid]; ok {
			sort.Strings(devs)
			sort.Strings(want)
			if strings.Join(devs, ",") != strings.Join(want, ",") {
				bad = append(bad, fmt.Sprintf("claim %s is prepared with %v, allocated %v", c.Name, devs, want))
			}
		}
	}
	return bad
}
