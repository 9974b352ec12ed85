package scenario

// runAllocateSizes admits one pod for every request size from 1 to the
// number of devices, each alone on the node, so every size goes through the
// kubelet's admission, preferred-allocation and Allocate path.
func runAllocateSizes(e *Env) error {
	for size := 1; size <= e.Spec.Devices; size++ {
		a, err := e.Admit("size", size)
		if err != nil {
			return err
		}
		e.step("pod %s asked for %d and got %v", a.Pod.Name, size, a.IDs)
		e.Pods.Delete(a.Pod)
	}
	return nil
}
