#include "src/cli/dra_command.h"

#include <string>

#include "src/cli/app.h"
#include "src/cli/validators.h"

namespace gpulet::cli {

CLI::App* AddDraCommand(CLI::App& app, daemon::DraRunOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "dra",
      "Serve the node's GPUs to the kubelet as a DRA driver (gpu.nvidia.com): "
      "registration, NodePrepareResources/NodeUnprepareResources, health");
  // Required, checked by RunDraCommand: `gpulet dra webhook` runs without.
  cmd->add_option("--node-name", options.node_name,
                  "this node's name: the pool of its devices (required)")
      ->envname("NODE_NAME");
  // Not ->envname("KUBECONFIG"): $KUBECONFIG may list several files, which
  // the API client merges; --kubeconfig is exactly one.
  cmd->add_option("--kubeconfig", options.kubeconfig,
                  "kubeconfig file (default: the files of $KUBECONFIG "
                  "merged, else the pod's service account)");
  cmd->add_option("--context", options.context,
                  "kubeconfig context (default: current-context)");
  cmd->add_option("--registry-dir", options.registry_dir,
                  "the kubelet's plugin registration directory")
      ->capture_default_str();
  cmd->add_option("--plugin-dir", options.plugin_dir,
                  "directory of the DRA socket (default: "
                  "/var/lib/kubelet/plugins/gpu.nvidia.com)");
  cmd->add_option("--state-dir", options.state_dir,
                  "directory of the prepared-claims checkpoint (default: the "
                  "plugin directory)");
  cmd->add_option("--cdi-dir", options.cdi_dir,
                  "where the per-claim CDI specs are written")
      ->envname("GPULET_CDI_DIR")
      ->capture_default_str();
  cmd->add_option("--dev-root", options.dev_root,
                  "root of the device nodes (default: the driver root)");
  cmd->add_option("--proc-root", options.proc_root,
                  "root of the kernel's /proc/driver files (MIG capability "
                  "minors)")
      ->capture_default_str();
  cmd->add_flag("--memory-shares", options.memory_shares,
                "publish whole GPUs shareable by memory "
                "(DRAConsumableCapacity): claims ask for a memory amount");
  cmd->add_option("--memory-share-unit", options.memory_share_unit,
                  "the step of a memory share: MiB, GiB or a size such as "
                  "512MiB or 2GiB")
      ->capture_default_str();
  cmd->add_option("--mps-root", options.mps_root,
                  "host directory of the claims' MPS control daemons (pipes, "
                  "logs, shm); needed by claims configured for MPS sharing")
      ->envname("MPS_ROOT");
  cmd->add_option("--metrics-address", options.metrics_address,
                  "host:port to serve Prometheus metrics on (GET /metrics), "
                  "e.g. :9400; empty: no metrics server")
      ->envname("METRICS_ADDRESS");
  cmd->add_option("--metrics-tls-cert-file", options.metrics_tls.cert_file,
                  "PEM certificate chain to serve /metrics over TLS with "
                  "(needs --metrics-tls-key-file); empty: plain HTTP")
      ->envname("METRICS_TLS_CERT_FILE");
  cmd->add_option("--metrics-tls-key-file", options.metrics_tls.key_file,
                  "PEM private key of --metrics-tls-cert-file")
      ->envname("METRICS_TLS_KEY_FILE");
  cmd->add_option("--metrics-client-ca-file",
                  options.metrics_tls.client_ca_file,
                  "PEM CAs of the client certificates /metrics requires "
                  "(mutual TLS; needs --metrics-tls-cert-file)")
      ->envname("METRICS_CLIENT_CA_FILE");
  cmd->add_option("--config-file,--config", options.config_file,
                  "the version: v1 config file (the device plugin's); its "
                  "health:, metrics: and dra: sections apply, read again on "
                  "SIGHUP")
      ->envname("CONFIG_FILE");
  cmd->add_option("--unhealthy-devices", options.unhealthy_devices,
                  "unhealthy devices are left out of the ResourceSlices "
                  "(drop) or published with a device taint (taint); "
                  "default: dra.unhealthyDevices, else drop")
      ->check(CLI::IsMember({"drop", "taint"}));
  cmd->add_option("--unhealthy-taint-effect", options.unhealthy_taint_effect,
                  "effect of the taint of a device made unhealthy by an Xid "
                  "or an ECC error (taint mode); default: "
                  "dra.taints.unhealthy, else NoSchedule")
      ->check(CLI::IsMember({"None", "NoSchedule", "NoExecute"}));
  cmd->add_option("--lost-taint-effect", options.lost_taint_effect,
                  "effect of the taint of a device whose GPU is lost "
                  "(taint mode); default: dra.taints.lost, else NoExecute")
      ->check(CLI::IsMember({"None", "NoSchedule", "NoExecute"}));
  cmd->add_option("--kube-api-qps", options.kube_qps,
                  "API server requests per second")
      ->check(NumberIn(1, 10000))
      ->capture_default_str();
  cmd->add_option("--kube-api-burst", options.kube_burst,
                  "API server request burst")
      ->check(WholeNumberIn(1, 10000))
      ->capture_default_str();
  return cmd;
}

int RunDraCommand(const GlobalOptions& global, daemon::DraRunOptions options,
                  std::ostream& err) {
  if (options.node_name.empty()) {
    err << "gpulet: --node-name is required (or NODE_NAME) (run 'gpulet "
           "--help' for usage)\n";
    return kExitUsage;
  }
  options.nvml.driver_root = global.driver_root;
  options.nvml.library_path = global.nvml_lib;
  options.sysfs_root = global.sysfs_root;
  absl::Status status = daemon::RunDra(options);
  if (status.ok()) return kExitOk;
  err << "gpulet: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument
             ? kExitUsage
             : kExitRuntimeError;
}

}  // namespace gpulet::cli
