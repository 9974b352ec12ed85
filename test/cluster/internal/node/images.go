package node

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Images are built here as OCI image layouts in a tar file, from files of
// this machine, and imported with `ctr images import`: nothing is pulled.

// Image names the fixture imports (the kubelet never pulls them: the pods
// use imagePullPolicy IfNotPresent or Never and the images are present).
const (
	PauseImage    = "gpulet.test/pause:1"
	WorkloadImage = "gpulet.test/busybox:1"
	GpuletImage   = "gpulet.test/gpulet:dev"
	// ExploitImage is busybox with a library of its own that its
	// environment preloads (exploitLayer).
	ExploitImage = "gpulet.test/exploit-ldpreload:1"
	// TenantAttackImage is busybox with the tenant-attacks scenario's
	// attacker, /tenant-attack (test/cluster/cmd/tenant-attack).
	TenantAttackImage = "gpulet.test/tenant-attack:1"
)

// The exploit image's environment: the library in its rootfs reached
// through the working directory (a process outside the container whose
// working directory is the rootfs resolves it there; an absolute /poc.so
// would name the node's own /), and a GPU request that wants no GPU but the
// driver (NVIDIA's "none"), which still brings the CDI spec's
// container-wide edits, hooks included. A GPU allocated by the device
// plugin replaces NVIDIA_VISIBLE_DEVICES.
const (
	ExploitPreload       = "/proc/self/cwd/poc.so"
	ExploitVisibleDevice = "none"
)

// layer is a set of files: image path -> entry.
type layer map[string]entry

type entry struct {
	src     string // regular file copied from the host
	link    string // symlink target
	dir     bool
	content []byte // regular file with this content
	mode    int64
}

func (l layer) addDirs(p string) {
	for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
		if _, ok := l[d]; !ok {
			l[d] = entry{dir: true, mode: 0755}
		}
	}
}

func (l layer) file(p, src string, mode int64) { l.addDirs(p); l[p] = entry{src: src, mode: mode} }
func (l layer) data(p string, b []byte)        { l.addDirs(p); l[p] = entry{content: b, mode: 0644} }
func (l layer) symlink(p, target string)       { l.addDirs(p); l[p] = entry{link: target} }
func (l layer) dir(p string)                   { l.addDirs(p); l[p] = entry{dir: true, mode: 0755} }

func (l layer) tar() ([]byte, error) {
	paths := make([]string, 0, len(l))
	for p := range l {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		e := l[p]
		name := strings.TrimPrefix(p, "/")
		h := &tar.Header{Name: name, Mode: e.mode, Format: tar.FormatPAX}
		var body []byte
		switch {
		case e.dir:
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
		case e.link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.link, 0777
		case e.src != "":
			b, err := os.ReadFile(e.src)
			if err != nil {
				return nil, err
			}
			body = b
		default:
			body = e.content
		}
		if h.Typeflag == 0 {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeOCIArchive writes an OCI image layout tar with one image named name
// (one uncompressed layer) running entrypoint.
func writeOCIArchive(path, name string, l layer, entrypoint, env []string) error {
	layerTar, err := l.tar()
	if err != nil {
		return err
	}
	blobs := map[string][]byte{}
	add := func(b []byte) string {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[d] = b
		return d
	}
	layerDigest := add(layerTar)
	config, _ := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": entrypoint, "Env": env},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	configDigest := add(config)
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": configDigest, "size": len(config)},
		"layers":        []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layerDigest, "size": len(layerTar)}},
	})
	manifestDigest := add(manifest)
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"manifests": []any{map[string]any{
			"mediaType": "application/vnd.oci.image.manifest.v1+json",
			"digest":    manifestDigest,
			"size":      len(manifest),
			"platform":  map[string]string{"architecture": "amd64", "os": "linux"},
			"annotations": map[string]string{
				"io.containerd.image.name":          name,
				"org.opencontainers.image.ref.name": name[strings.LastIndex(name, ":")+1:],
			},
		}},
	})
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	put := func(n string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := put("index.json", index); err != nil {
		return err
	}
	digests := make([]string, 0, len(blobs))
	for d := range blobs {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		if err := put("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), blobs[d]); err != nil {
			return err
		}
	}
	return tw.Close()
}

const busybox = "/bin/busybox"

// simToolbox is busybox in gpulet's image, for the simulated driver's scripts.
const simToolbox = "/usr/lib/gpulet-sim/busybox"

// busyboxLayer is busybox-static with a link for every applet.
func busyboxLayer() (layer, error) {
	out, err := exec.Command(busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list-full (busybox-static installed?): %w", err)
	}
	l := layer{}
	l.file("/bin/busybox", busybox, 0755)
	for _, applet := range strings.Fields(string(out)) {
		p := "/" + applet
		if p != "/bin/busybox" {
			l.symlink(p, "/bin/busybox")
		}
	}
	for _, d := range []string{"/tmp", "/proc", "/sys", "/dev", "/etc", "/var/run"} {
		l.dir(d)
	}
	l.data("/etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\n"))
	l.data("/etc/group", []byte("root:x:0:\n"))
	return l, nil
}

// pauseScript is the sandbox's process: it sleeps until SIGTERM/SIGINT
// and then exits at once (PID 1 ignores signals it has no handler for).
const pauseScript = `trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done`

// gpuletLayer is the run-time stage of deploy/Containerfile assembled from
// this machine: the files of the Debian packages deploy/runtime-packages.txt
// names (the libraries the binaries load), gpulet and gpulet-runtime from
// this build, and the entrypoint `gpulet plugin`.
//
// The NVML simulator stands in for the driver's libnvidia-ml, which needs
// only libc; the simulator itself loads abseil and yaml-cpp, which gpulet
// links statically and the image does not carry. The packages of the
// simulator's libraries (simLib's, by ldd) are added to this test image
// only, so the image's own list stays what gpulet needs.
func gpuletLayer(srcDir, gpulet, runtime, simLib string) (layer, error) {
	text, err := os.ReadFile(filepath.Join(srcDir, "deploy/runtime-packages.txt"))
	if err != nil {
		return nil, err
	}
	var pkgs []string
	for _, line := range strings.Split(string(text), "\n") {
		if f := strings.Fields(strings.SplitN(line, "#", 2)[0]); len(f) > 0 {
			pkgs = append(pkgs, f[0])
		}
	}
	simPkgs, err := libraryPackages(simLib)
	if err != nil {
		return nil, err
	}
	for _, pkg := range simPkgs {
		if !slices.Contains(pkgs, pkg) {
			pkgs = append(pkgs, pkg)
		}
	}
	l := layer{}
	for _, pkg := range pkgs {
		out, err := exec.Command("dpkg-query", "-L", pkg).Output()
		if err != nil {
			return nil, fmt.Errorf("dpkg-query -L %s: %w", pkg, err)
		}
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, "/usr/share/") || p == "/." {
				continue
			}
			st, err := os.Lstat(p)
			if err != nil {
				continue
			}
			switch {
			case st.Mode()&os.ModeSymlink != 0:
				t, _ := os.Readlink(p)
				l.symlink(p, t)
			case st.Mode().IsRegular():
				l.file(p, p, int64(st.Mode().Perm()))
			}
		}
	}
	// Debian's merged /usr: the loader's path in the binaries is /lib64/...
	for _, link := range [][2]string{{"/lib", "usr/lib"}, {"/lib64", "usr/lib64"}, {"/bin", "usr/bin"}, {"/sbin", "usr/sbin"}} {
		if t, err := os.Readlink(link[0]); err == nil {
			l.symlink(link[0], t)
		}
	}
	l.file("/usr/bin/gpulet", gpulet, 0755)
	l.file("/usr/bin/gpulet-runtime", runtime, 0755)
	// The simulated driver's nvidia-smi and nvidia-cuda-mps-control are
	// shell scripts that gpulet runs in its container: deploy/Containerfile's
	// base (bookworm-slim) has the shell and the tools they use, this image
	// gets busybox's.
	l.file(simToolbox, busybox, 0755)
	for _, tool := range []string{"sh", "mkdir", "mkfifo", "rm", "dirname"} {
		if _, ok := l["/usr/bin/"+tool]; !ok {
			l.symlink("/usr/bin/"+tool, simToolbox)
		}
	}
	for _, d := range []string{"/tmp", "/proc", "/sys", "/dev", "/etc/ld.so.conf.d", "/var/run"} {
		l.dir(d)
	}
	l.data("/etc/ld.so.conf", []byte("include /etc/ld.so.conf.d/*.conf\n"))
	l.data("/etc/ld.so.conf.d/x86_64-linux-gnu.conf", []byte("/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n"))
	return l, nil
}

// libraryPackages names the Debian packages owning the shared libraries
// lib loads (ldd), each once, in the order first met.
func libraryPackages(lib string) ([]string, error) {
	out, err := exec.Command("ldd", lib).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", lib, err)
	}
	var pkgs []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[1] != "=>" || !strings.HasPrefix(f[2], "/") {
			continue
		}
		resolved, err := filepath.EvalSymlinks(f[2])
		if err != nil {
			return nil, fmt.Errorf("ldd %s: %s: %w", lib, f[2], err)
		}
		owner, err := exec.Command("dpkg-query", "-S", resolved).Output()
		if err != nil {
			// merged /usr: dpkg may know the file under /lib
			owner, err = exec.Command("dpkg-query", "-S", strings.TrimPrefix(resolved, "/usr")).Output()
		}
		if err != nil {
			return nil, fmt.Errorf("dpkg-query -S %s (loaded by %s): %w", resolved, lib, err)
		}
		pkg := strings.SplitN(strings.SplitN(string(owner), ":", 2)[0], ",", 2)[0]
		if !slices.Contains(pkgs, pkg) {
			pkgs = append(pkgs, pkg)
		}
	}
	return pkgs, nil
}

// exploitLayer is busybox (static, so nothing in the container itself
// honours LD_PRELOAD) with lib as /poc.so and an /etc/ld.so.conf.d for the
// ld-cache hook to write into.
func exploitLayer(bb layer, lib string) layer {
	l := layer{}
	for p, e := range bb {
		l[p] = e
	}
	l.file("/poc.so", lib, 0755)
	l.dir("/etc/ld.so.conf.d")
	return l
}

// exploitEnv is the exploit image's environment: the preload, the GPU
// request, and where the library records a load (marker, a path that
// exists only outside the container).
func exploitEnv(marker string) []string {
	return []string{"LD_PRELOAD=" + ExploitPreload, "NVIDIA_VISIBLE_DEVICES=" + ExploitVisibleDevice,
		"GPULET_EXPLOIT_MARKER=" + marker}
}

// imageSources are the files of this build the images are made of.
type imageSources struct {
	srcDir, gpulet, runtime, simLib string
	exploitLib, exploitMarker       string
	tenantAttack                    string
}

// tenantAttackLayer is busybox with the static attacker program.
func tenantAttackLayer(bb layer, program string) layer {
	l := layer{}
	for p, e := range bb {
		l[p] = e
	}
	l.file("/tenant-attack", program, 0755)
	return l
}

// buildImages writes the five archives into dir and returns their paths.
func buildImages(dir string, src imageSources) ([]string, error) {
	bb, err := busyboxLayer()
	if err != nil {
		return nil, err
	}
	g, err := gpuletLayer(src.srcDir, src.gpulet, src.runtime, src.simLib)
	if err != nil {
		return nil, err
	}
	path := "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	archives := []struct {
		file, name string
		l          layer
		entry      []string
		env        []string
	}{
		{"pause.tar", PauseImage, bb, []string{"/bin/sh", "-c", pauseScript}, nil},
		{"busybox.tar", WorkloadImage, bb, []string{"/bin/sh"}, nil},
		{"gpulet.tar", GpuletImage, g, []string{"gpulet", "plugin"}, nil},
		{"exploit-ldpreload.tar", ExploitImage, exploitLayer(bb, src.exploitLib), []string{"/bin/sh"},
			exploitEnv(src.exploitMarker)},
		{"tenant-attack.tar", TenantAttackImage, tenantAttackLayer(bb, src.tenantAttack), []string{"/tenant-attack"}, nil},
	}
	var paths []string
	for _, a := range archives {
		p := filepath.Join(dir, a.file)
		if err := writeOCIArchive(p, a.name, a.l, a.entry, append([]string{path}, a.env...)); err != nil {
			return nil, fmt.Errorf("image %s: %w", a.name, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}
