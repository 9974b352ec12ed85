package node

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Mount-namespace set-up. The fixture's mount namespace is private (made
// so when it was created), so each of these hides a host directory from
// the node's processes only; nothing is visible on the host.

// mountPrivate makes a tmpfs /run and /var/log, and /var/lib/kubelet and
// /var/lib/cni backed by the state directory. It returns the directories it
// had to create on the host (the mount points), which teardown removes
// again.
func mountPrivate(p Paths) (created []string, err error) {
	for _, d := range []string{"/run", "/var/log"} {
		if err := syscall.Mount("tmpfs", d, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=755,size=256m"); err != nil {
			return nil, fmt.Errorf("mount tmpfs on %s: %w", d, err)
		}
	}
	// The kubelet's fixed paths, and libcni's result cache (which containerd
	// does not let one move).
	for _, b := range [][2]string{{p.Kubelet(), kubeletDir}, {p.CNICache(), cniCacheDir}} {
		src, dst := b[0], b[1]
		if _, err := os.Stat(dst); os.IsNotExist(err) {
			if err := os.MkdirAll(dst, 0755); err != nil {
				return created, err
			}
			created = append(created, dst)
		}
		if err := os.MkdirAll(src, 0755); err != nil {
			return created, err
		}
		if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
			return created, fmt.Errorf("bind %s on %s: %w", src, dst, err)
		}
	}
	return created, nil
}

// installRuntime installs gpulet-runtime as docs/install.md tells users to,
// at /usr/bin/gpulet-runtime, where containerd's config and the CDI specs'
// ld-cache hook name it. Here /usr/bin becomes a read-only overlay of a
// state directory holding the binary on top of the host's /usr/bin, so the
// file exists only inside the fixture's mount namespace.
func installRuntime(p Paths, runtime string) error {
	dir := filepath.Join(p.State, "usr-bin")
	if err := os.MkdirAll(dir, 0755); err != nil {
		return err
	}
	data, err := os.ReadFile(runtime)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "gpulet-runtime"), data, 0755); err != nil {
		return err
	}
	if err := syscall.Mount("overlay", usrBin, "overlay", syscall.MS_RDONLY, "lowerdir="+dir+":"+usrBin); err != nil {
		return fmt.Errorf("overlay on %s: %w", usrBin, err)
	}
	return nil
}

// mountPoints lists the mount points at or under any of roots, deepest
// (latest) first.
func mountPoints(roots ...string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pts []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		for _, r := range roots {
			if mp == r || strings.HasPrefix(mp, strings.TrimSuffix(r, "/")+"/") {
				pts = append(pts, mp)
				break
			}
		}
	}
	// mountinfo lists parents before children: reverse it.
	for i, j := 0, len(pts)-1; i < j; i, j = i+1, j-1 {
		pts[i], pts[j] = pts[j], pts[i]
	}
	return pts, s.Err()
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// unmountAll unmounts everything at or under roots and checks that nothing
// is left.
func unmountAll(roots ...string) error {
	for attempt := 0; attempt < 3; attempt++ {
		pts, err := mountPoints(roots...)
		if err != nil {
			return err
		}
		if len(pts) == 0 {
			return nil
		}
		for _, mp := range pts {
			if err := syscall.Unmount(mp, 0); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
				_ = syscall.Unmount(mp, syscall.MNT_DETACH)
			}
		}
	}
	pts, err := mountPoints(roots...)
	if err != nil {
		return err
	}
	if len(pts) > 0 {
		sort.Strings(pts)
		return fmt.Errorf("still mounted: %s", strings.Join(pts, ", "))
	}
	return nil
}

// network brings up loopback and the node's interface: one end of a veth
// pair inside the namespace carries the node's address (the kubelet refuses
// a loopback node IP). There is no default route: nothing can be sent
// anywhere outside the namespace.
func network() error {
	cmds := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "gpulet0", "type", "veth", "peer", "name", "gpulet1"},
		{"addr", "add", NodeIP + "/24", "dev", "gpulet0"},
		{"link", "set", "gpulet1", "up"},
		{"link", "set", "gpulet0", "up"},
	}
	for _, c := range cmds {
		if out, err := exec.Command("ip", c...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	return nil
}
