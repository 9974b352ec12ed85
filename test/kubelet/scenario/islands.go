package scenario

import (
	"fmt"
	"slices"
)

// runIslands checks that the kubelet takes the plugin's topology-aware
// choice: with every device busy but two on each of two NUMA nodes (freed in
// interleaved order, so a first-free policy would straddle them), a pod asking
// for 2 devices must get two devices of the same node. On islands-16 the NUMA
// nodes are the two NVLink islands.
func runIslands(e *Env) error {
	numa := map[string]int64{}
	for _, d := range e.Kubelet.HealthyDevices(e.Spec.Resource) {
		if len(d.NUMANodes) == 1 {
			numa[d.ID] = d.NUMANodes[0]
		}
	}
	perNode := map[int64]int{}
	for _, n := range numa {
		perNode[n]++
	}
	wide := 0
	for _, c := range perNode {
		if c >= 2 {
			wide++
		}
	}
	if wide < 2 {
		return skipf("the devices do not span two NUMA nodes with 2+ devices each")
	}
	holders := map[string]*Admitted{}
	for i := 0; i < e.Spec.Devices; i++ {
		a, err := e.Admit("fill", 1)
		if err != nil {
			return err
		}
		holders[a.IDs[0]] = a
	}
	byNode := map[int64][]string{}
	for id := range holders {
		if n, ok := numa[id]; ok {
			byNode[n] = append(byNode[n], id)
		}
	}
	var nodes []int64
	for n, ids := range byNode {
		if len(ids) >= 2 {
			nodes = append(nodes, n)
			slices.Sort(byNode[n])
		}
	}
	slices.Sort(nodes)
	if len(nodes) < 2 {
		return fmt.Errorf("need two NUMA nodes with 2+ devices each, found %v", byNode)
	}
	a, b := byNode[nodes[0]], byNode[nodes[1]]
	freed := []string{a[0], b[0], a[len(a)-1], b[len(b)-1]}
	for _, id := range freed {
		e.Pods.Delete(holders[id].Pod)
	}
	e.step("all %d devices busy, then freed %v (NUMA %d, %d, %d, %d)", e.Spec.Devices, freed,
		numa[freed[0]], numa[freed[1]], numa[freed[2]], numa[freed[3]])
	got, err := e.Admit("pair", 2)
	if err != nil {
		return err
	}
	if numa[got.IDs[0]] != numa[got.IDs[1]] {
		return fmt.Errorf("a 2-device pod got %v on NUMA nodes %d and %d; want both on one node",
			got.IDs, numa[got.IDs[0]], numa[got.IDs[1]])
	}
	e.step("a 2-device pod got %v, both on NUMA node %d", got.IDs, numa[got.IDs[0]])
	return nil
}
