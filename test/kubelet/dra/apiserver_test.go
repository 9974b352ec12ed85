package dra

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// claimServer answers gpulet's GETs of ResourceClaims over HTTPS from the
// same fake clientset the kubelet's DRA manager reads, so both sides see one
// set of claims. It counts the GETs per claim: a claim answered from
// gpulet's checkpoint is not read again.
type claimServer struct {
	srv       *httptest.Server
	clientset *fake.Clientset

	mu   sync.Mutex
	gets map[string]int
}

const claimsPrefix = "/apis/resource.k8s.io/v1/namespaces/"

func startClaimServer(t *testing.T, cs *fake.Clientset) *claimServer {
	s := &claimServer{clientset: cs, gets: map[string]int{}}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *claimServer) serve(w http.ResponseWriter, r *http.Request) {
	// /apis/resource.k8s.io/v1/namespaces/<ns>/resourceclaims/<name>
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, claimsPrefix), "/")
	if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, claimsPrefix) ||
		len(parts) != 3 || parts[1] != "resourceclaims" {
		http.Error(w, "not served here", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	s.gets[parts[0]+"/"+parts[2]]++
	s.mu.Unlock()
	claim, err := s.clientset.ResourceV1().ResourceClaims(parts[0]).Get(r.Context(), parts[2], metav1.GetOptions{})
	w.Header().Set("Content-Type", "application/json")
	if apierrors.IsNotFound(err) {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"kind": "Status", "apiVersion": "v1", "status": "Failure",
			"reason": "NotFound", "code": 404, "message": err.Error()})
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_ = json.NewEncoder(w).Encode(claim)
}

func (s *claimServer) Gets(ns, name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets[ns+"/"+name]
}

// kubeconfig writes a kubeconfig for the server (its CA, a static token).
func (s *claimServer) kubeconfig(t *testing.T, dir string) string {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: u
  user:
    token: harness-token
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`, s.srv.URL, base64.StdEncoding.EncodeToString(ca))
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
