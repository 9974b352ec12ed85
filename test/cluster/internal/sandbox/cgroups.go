package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// CgroupMounts lists the mount points of the host's cgroup hierarchies
// (v1 controllers and, on hybrid hosts, the v2 tree).
func CgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	var dirs []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if t := fields[sep+1]; (t == "cgroup" || t == "cgroup2") && !seen[fields[4]] {
			seen[fields[4]] = true
			dirs = append(dirs, fields[4])
		}
	}
	return dirs, s.Err()
}

// MakeCgroups creates <hierarchy>/<name> in every hierarchy (the kubelet
// requires its cgroup root to exist), giving cpuset the parent's CPUs and
// memory nodes.
func MakeCgroups(name string) error {
	dirs, err := CgroupMounts()
	if err != nil {
		return err
	}
	for _, d := range dirs {
		dir := filepath.Join(d, name)
		if err := os.MkdirAll(dir, 0755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), b, 0644); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
				}
			}
		}
	}
	return nil
}

// RemoveCgroups removes <hierarchy>/<name> and everything under it, deepest
// first. The cgroups must be empty (every process ended).
func RemoveCgroups(name string, log func(string, ...any)) error {
	if name == "" || strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("refusing to remove cgroup %q", name)
	}
	dirs, err := CgroupMounts()
	if err != nil {
		return err
	}
	var failed []string
	for _, d := range dirs {
		root := filepath.Join(d, name)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		var all []string
		_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
		for _, p := range all {
			if err := os.Remove(p); err != nil {
				failed = append(failed, err.Error())
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("cgroups left behind: %s", strings.Join(failed, "; "))
	}
	return nil
}
