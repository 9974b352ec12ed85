// `gpulet extender` as a process: wires the scheduler extender
// (src/cluster/extender) to the API server and to its HTTP server. Owns the
// threads: the node list-watch, the HTTP server's accept and connection
// threads. No policy here.
//
// RunExtender() blocks SIGTERM/SIGINT first (before any thread exists),
// loads the API server configuration (a kubeconfig, else the pod's service
// account), starts watching nodes, serves, and returns when a signal
// arrives: the server stops first (finishing the requests in flight), then
// the watch.
//
// Thread safety: call once, from the main thread, before any other thread
// is created.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gpulet::daemon {

struct ExtenderRunOptions {
  std::string address = ":12346";
  std::string kubeconfig;  // empty: in-cluster configuration
  std::string context;
  std::string resource = "nvidia.com/gpu-memory";
  std::string default_policy = "binpack";
  std::string tls_cert_file;
  std::string tls_key_file;
  // Mutual TLS: the CAs of client certificates, and the names (CN or DNS
  // SAN) allowed to call the verbs and /metrics (empty: any the CA signed).
  std::string client_ca_file;
  std::vector<std::string> allowed_client_names;
  // spec.schedulerName of the pods bind accepts.
  std::vector<std::string> scheduler_names = {"default-scheduler"};
  absl::Duration request_deadline = absl::Seconds(30);
  absl::Duration idle_timeout = absl::Seconds(5);
  size_t max_body_bytes = 4 << 20;
  int max_connections = 64;
  int max_connections_per_peer = 32;
  double kube_qps = 50;
  int kube_burst = 100;
  // Called with the bound port once serving (tests pick port 0).
  std::function<void(int port)> on_serving{};
};

// Serves until SIGTERM or SIGINT. Errors name the flag or file at fault:
// InvalidArgument for an unusable option, the configuration loader's
// errors, Unavailable when the address cannot be bound.
absl::Status RunExtender(const ExtenderRunOptions& options);

}  // namespace gpulet::daemon
