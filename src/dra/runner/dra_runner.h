// `gpulet dra` as a process: the kubelet-facing DRA driver (src/dra/kubelet)
// wired to NVML, the API server and the kubelet. Owns the threads: the two h2
// servers', the health monitor's, the slice publisher's. No policy here.
//
// RunDra() blocks SIGTERM/SIGINT first (before any thread exists), loads
// the API server configuration (claims are read from it; its requests are
// counted in the registry /metrics serves, when --metrics-address is
// given), loads NVML and
// discovers the GPUs, builds the node's CDI spec (the device edits claim
// specs copy), loads the prepared-claims checkpoint, starts the health
// monitor (a fatal Xid marks the GPU's DRA devices unhealthy on the
// DeviceHealthBoard, which the DRA health service streams to the kubelet and
// the ResourceSlice publisher reads), then serves the registration and DRA
// sockets and keeps the node's ResourceSlices published (DraSlices,
// dra_slices.h; left in place on a stop) until SIGTERM or SIGINT. SIGHUP
// reads the config file again and applies its health: and dra: sections
// (a changed metrics: section is logged and needs a restart). A node
// runs either this or the device plugin (`gpulet plugin`) for its GPUs,
// never both.
//
// Thread safety: call once, from the main thread, before any other thread
// is created.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "src/dra/kubelet/device_health.h"
#include "src/gpu/nvml/library_search.h"
#include "src/net/http/metrics_handler.h"

namespace gpulet::daemon {

struct DraRunOptions {
  std::string node_name;   // required: the pool name
  std::string kubeconfig;  // empty: in-cluster configuration
  std::string context;
  std::string registry_dir = "/var/lib/kubelet/plugins_registry";
  // The DRA socket's directory; empty: /var/lib/kubelet/plugins/<driver>.
  std::string plugin_dir;
  // Where the checkpoint lives; empty: the plugin directory.
  std::string state_dir;
  std::string cdi_dir = "/var/run/cdi";
  nvml::LoadOptions nvml;
  std::string sysfs_root = "/sys";
  std::string dev_root;  // empty: the driver root
  // Where the kernel's /proc/driver/nvidia-caps/mig-minors is read (the
  // minors of MIG devices' capability nodes): "/" on a node, in or out of
  // a container.
  std::string proc_root = "/";
  // --memory-shares: whole GPUs published shareable by memory
  // (DRAConsumableCapacity), in steps of --memory-share-unit ("GiB",
  // "512MiB", as sharing.memory.unit).
  bool memory_shares = false;
  std::string memory_share_unit = "GiB";
  // --mps-root: where claims' MPS control daemons keep their pipes, logs
  // and /dev/shm (<mps-root>/claim-<uid>/, each claim's own, shared with
  // that claim's clients only); empty: claims asking for MPS sharing fail.
  std::string mps_root;
  // --metrics-address: where /metrics and /healthz are served (the API
  // client's rest_client_* metrics), "host:port"; empty: no metrics
  // server. TLS as --metrics-tls-cert-file, --metrics-tls-key-file and
  // --metrics-client-ca-file give it (http::MetricsTls).
  std::string metrics_address;
  http::MetricsTls metrics_tls;
  // --config-file: the `version: v1` file whose health:, metrics: and dra:
  // sections apply (dra_config.h); read again on SIGHUP. Empty: none.
  std::string config_file;
  // --unhealthy-devices ("drop", "taint"), --unhealthy-taint-effect and
  // --lost-taint-effect ("None", "NoSchedule", "NoExecute"); empty: the
  // file's dra: section, else drop, NoSchedule, NoExecute.
  std::string unhealthy_devices;
  std::string unhealthy_taint_effect;
  std::string lost_taint_effect;
  double kube_qps = 20;
  int kube_burst = 40;
  // Called once serving, with the health board (the slice publisher's
  // seam; tests inject health through it).
  std::function<void(dra::DeviceHealthBoard&)> on_serving{};
};

// Serves until SIGTERM or SIGINT. Errors name the flag or file at fault
// (InvalidArgument for a bad flag or config file).
absl::Status RunDra(const DraRunOptions& options);

}  // namespace gpulet::daemon
