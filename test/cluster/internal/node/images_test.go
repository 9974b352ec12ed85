package node

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestOCIArchiveIsAConsistentLayout(t *testing.T) {
	l := layer{}
	l.data("/etc/hello", []byte("hi\n"))
	l.symlink("/bin/sh", "/bin/busybox")
	path := filepath.Join(t.TempDir(), "img.tar")
	if err := writeOCIArchive(path, "gpulet.test/x:1", l, []string{"/bin/sh"}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
	for name, b := range files {
		if dir, digest := filepath.Split(name); dir == "blobs/sha256/" {
			sum := sha256.Sum256(b)
			if hex.EncodeToString(sum[:]) != digest {
				t.Errorf("blob %s has digest %x", name, sum)
			}
		}
	}
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, files["index.json"])
	}
	if index.Manifests[0].Annotations["io.containerd.image.name"] != "gpulet.test/x:1" {
		t.Errorf("image name annotation: %v", index.Manifests[0].Annotations)
	}
	m := files["blobs/sha256/"+index.Manifests[0].Digest[len("sha256:"):]]
	var manifest struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	if err := json.Unmarshal(m, &manifest); err != nil || len(manifest.Layers) != 1 {
		t.Fatalf("manifest: %v %s", err, m)
	}
	if _, ok := files["blobs/sha256/"+manifest.Config.Digest[len("sha256:"):]]; !ok {
		t.Errorf("config blob missing")
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout: %s", files["oci-layout"])
	}
}

// The exploit image is busybox plus its library; the busybox layer the
// other images use stays as it was.
func TestExploitLayerAddsTheLibraryOnly(t *testing.T) {
	bb := layer{}
	bb.file("/bin/busybox", "/bin/busybox", 0755)
	l := exploitLayer(bb, "/build/ldpreload_marker.so")
	if e, ok := l["/poc.so"]; !ok || e.src != "/build/ldpreload_marker.so" {
		t.Errorf("exploit layer's /poc.so: %+v", l["/poc.so"])
	}
	if _, ok := l["/bin/busybox"]; !ok {
		t.Errorf("exploit layer has no busybox")
	}
	if _, ok := bb["/poc.so"]; ok || len(bb) != 2 {
		t.Errorf("the busybox layer changed: %v", bb)
	}
	// The preload is resolved through the working directory (the rootfs, for
	// a process outside the container), never as a node path.
	env := exploitEnv("/state/marker")
	if env[0] != "LD_PRELOAD=/proc/self/cwd/poc.so" || env[2] != "GPULET_EXPLOIT_MARKER=/state/marker" {
		t.Errorf("exploit image env: %v", env)
	}
}
