#include "src/dra/runner/dra_runner.h"

#include <signal.h>

#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/base/common/logging.h"
#include "src/base/common/signal_channel.h"
#include "src/base/common/status_macros.h"
#include "src/base/config/config.h"
#include "src/base/config/names.h"
#include "src/base/config/resolve.h"
#include "src/base/metrics/dra_metrics.h"
#include "src/base/metrics/registry.h"
#include "src/dra/kubelet/claim_preparer.h"
#include "src/dra/kubelet/device_names.h"
#include "src/dra/kubelet/dra_server.h"
#include "src/dra/kubelet/node_devices.h"
#include "src/dra/runner/claim_reporter.h"
#include "src/dra/runner/claim_status_writer.h"
#include "src/dra/runner/dra_config.h"
#include "src/dra/runner/dra_health.h"
#include "src/dra/runner/dra_sharing.h"
#include "src/dra/runner/dra_slices.h"
#include "src/dra/slices/node_facts.h"
#include "src/gpu/device/discovery.h"
#include "src/gpu/device/nvml_error_kind.h"
#include "src/gpu/device/topology.h"
#include "src/gpu/nvml/dynamic_library.h"
#include "src/model/cdi/driver.h"
#include "src/model/cdi/spec_builder.h"
#include "src/model/cdi/spec_file.h"
#include "src/net/http/server.h"
#include "src/net/kube/api_client.h"
#include "src/net/kube/api_path.h"
#include "src/net/kube/client.h"

namespace gpulet::daemon {
namespace {

absl::StatusOr<std::string> ClaimPath(const dra::ClaimRef& ref) {
  GPULET_RETURN_IF_ERROR(
      kube::ValidateName("claim namespace", ref.namespace_name));
  GPULET_RETURN_IF_ERROR(kube::ValidateName("claim name", ref.name));
  return absl::StrCat("/apis/resource.k8s.io/v1/namespaces/",
                      ref.namespace_name, "/resourceclaims/", ref.name);
}

absl::StatusOr<device::Node> DiscoverGpus(nvml::Library& lib,
                                          const std::string& sysfs_root) {
  absl::Status init = lib.Init();
  if (device::IsNvmlGpuNotFound(init)) return device::Node{};
  if (!init.ok()) return common::Annotate(init, "failed to initialize NVML");
  device::DiscoveryOptions discovery{sysfs_root};
  discovery.tolerate_gpu_failures = true;
  return device::Discover(lib, discovery);
}

absl::Status MakeDirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("create ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

// The node's CDI spec, whose device edits the claims' specs copy; empty on
// a node without GPUs (nothing can be prepared there).
absl::StatusOr<cdi::Spec> NodeSpec(const device::Node& node,
                                   const DraRunOptions& options) {
  if (node.gpus.empty()) return cdi::Spec{};
  cdi::DriverOptions driver_files;
  driver_files.driver_root = options.nvml.driver_root;
  driver_files.dev_root = options.dev_root;
  driver_files.proc_root = options.proc_root;
  return cdi::GenerateSpec(node, driver_files);
}

// Claims as the API server has them.
dra::ClaimGetter ClaimsFrom(kube::Client& client) {
  return [&client](const dra::ClaimRef& ref,
                   std::stop_token stop) -> absl::StatusOr<nlohmann::json> {
    GPULET_ASSIGN_OR_RETURN(std::string path, ClaimPath(ref));
    absl::StatusOr<nlohmann::json> claim = client.Get(path, stop);
    if (!claim.ok()) {
      return common::Annotate(claim.status(),
                              absl::StrCat("get claim ", dra::ClaimName(ref)));
    }
    return claim;
  };
}

// What the ResourceSlices publish: the node with its NVLink domains and
// PCIe roots. Without a topology (NVML would not give it) the GPUs carry no
// NVLink domain, which a claim's matchAttribute then cannot satisfy.
draslice::NodeDevices SliceDevices(nvml::Library& lib, const device::Node& node,
                                   const std::string& sysfs_root) {
  std::optional<device::Topology> topology;
  if (!node.gpus.empty()) {
    absl::StatusOr<device::Topology> built = device::BuildTopology(lib, node);
    if (built.ok()) {
      topology = *std::move(built);
    } else {
      GPULET_LOG(WARNING) << "dra: no NVLink domains in the ResourceSlices: "
                          << built.status().message();
    }
  }
  return draslice::CollectNodeDevices(node, topology ? &*topology : nullptr,
                                      sysfs_root, {});
}

// How the ResourceSlices are published; InvalidArgument naming the flag.
absl::StatusOr<draslice::SliceOptions> SliceOptionsOf(
    const DraRunOptions& options) {
  draslice::SliceOptions slices;
  slices.node_name = options.node_name;
  if (!options.memory_shares) return slices;
  absl::StatusOr<int64_t> unit_mib =
      config::ParseMemoryUnit(options.memory_share_unit);
  if (!unit_mib.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--memory-share-unit: ", unit_mib.status().message()));
  }
  slices.memory_share_step = static_cast<uint64_t>(*unit_mib) << 20;
  return slices;
}

// The driver's tools under the driver root; one not found fails only the
// claims that need it.
DraSharingOptions SharingOptions(const DraRunOptions& options) {
  DraSharingOptions out;
  const std::string root =
      options.nvml.driver_root.empty() ? "/" : options.nvml.driver_root;
  if (absl::StatusOr<std::string> smi =
          cdi::FindDriverBinary(root, "nvidia-smi");
      smi.ok()) {
    out.nvidia_smi = *smi;
  }
  if (absl::StatusOr<std::string> control =
          cdi::FindDriverBinary(root, "nvidia-cuda-mps-control");
      control.ok()) {
    out.mps_control = *control;
  }
  out.mps_root = options.mps_root;
  return out;
}

// The /metrics server of the settings' address; null without one.
absl::StatusOr<std::unique_ptr<http::Server>> ServeMetrics(
    const DraSettings& settings, const metrics::Registry& registry) {
  if (settings.metrics_address.empty()) {
    return std::unique_ptr<http::Server>();
  }
  absl::StatusOr<std::unique_ptr<http::Server>> started =
      http::Server::Start(http::MetricsServerOptions(settings.metrics_address,
                                                     settings.metrics_tls),
                          http::MetricsHandler(registry));
  if (!started.ok()) {
    return common::Annotate(started.status(), "--metrics-address");
  }
  return started;
}

DraConfigFlags ConfigFlagsOf(const DraRunOptions& options) {
  return {.config_file = options.config_file,
          .unhealthy_devices = options.unhealthy_devices,
          .unhealthy_taint_effect = options.unhealthy_taint_effect,
          .lost_taint_effect = options.lost_taint_effect,
          .metrics_address = options.metrics_address,
          .metrics_tls = options.metrics_tls};
}

// The config file read (again) and merged with the flags; the health
// monitor counts into `health_metrics`.
absl::StatusOr<DraSettings> LoadSettings(
    const DraRunOptions& options,
    const metrics::GpuletMetrics* health_metrics) {
  GPULET_ASSIGN_OR_RETURN(config::Config file,
                          LoadDraConfigFile(options.config_file));
  GPULET_ASSIGN_OR_RETURN(DraSettings settings,
                          ResolveDraSettings(ConfigFlagsOf(options), file,
                                             config::ProcessEnvironment()));
  settings.health.metrics = health_metrics;
  return settings;
}

bool SameMetricsServer(const DraSettings& a, const DraSettings& b) {
  return a.metrics_address == b.metrics_address &&
         a.metrics_tls.cert_file == b.metrics_tls.cert_file &&
         a.metrics_tls.key_file == b.metrics_tls.key_file &&
         a.metrics_tls.client_ca_file == b.metrics_tls.client_ca_file;
}

// SIGHUP: the file read again; health and slices follow it. A file that
// cannot be used changes nothing.
void Reload(const DraRunOptions& options,
            const metrics::GpuletMetrics& health_metrics, DraSettings& current,
            DraHealth& health, DraSlices& slices) {
  absl::StatusOr<DraSettings> next = LoadSettings(options, &health_metrics);
  if (!next.ok()) {
    GPULET_LOG(ERROR) << "dra: reload: " << next.status().message()
                      << "; keeping the running configuration";
    health_metrics.config_reloads->Add({metrics::kResultError});
    return;
  }
  if (absl::Status applied = health.Apply(next->health); !applied.ok()) {
    // The previous monitor is stopped too: no health checks until the
    // next reload or restart.
    GPULET_LOG(ERROR) << "dra: reload: the health monitor did not start: "
                      << applied.message();
  }
  slices.SetUnhealthyDevices(next->dra);
  if (!SameMetricsServer(current, *next)) {
    GPULET_LOG(WARNING) << "dra: reload: a changed metrics address or TLS "
                           "file path needs a restart";
  }
  current = *std::move(next);
  health_metrics.config_reloads->Add({metrics::kResultOk});
  GPULET_LOG(INFO) << "dra: configuration reloaded; unhealthy devices "
                   << config::ToString(current.dra.unhealthy_devices);
}

}  // namespace

absl::Status RunDra(const DraRunOptions& options) {
  GPULET_ASSIGN_OR_RETURN(std::unique_ptr<SignalChannel> signals,
                          SignalChannel::Create());
  GPULET_RETURN_IF_ERROR(kube::ValidateName("--node-name", options.node_name));
  GPULET_ASSIGN_OR_RETURN(draslice::SliceOptions slice_options,
                          SliceOptionsOf(options));
  const std::string driver(dra::kDriverName);
  const std::string plugin_dir =
      options.plugin_dir.empty()
          ? absl::StrCat("/var/lib/kubelet/plugins/", driver)
          : options.plugin_dir;
  const std::string state_dir =
      options.state_dir.empty() ? plugin_dir : options.state_dir;
  // Before the API client, which records its requests in it.
  metrics::Registry registry;
  GPULET_ASSIGN_OR_RETURN(metrics::GpuletMetrics health_metrics,
                          metrics::GpuletMetrics::RegisterHealth(registry));
  GPULET_ASSIGN_OR_RETURN(metrics::DraMetrics dra_metrics,
                          metrics::DraMetrics::Register(registry));
  GPULET_ASSIGN_OR_RETURN(DraSettings settings,
                          LoadSettings(options, &health_metrics));
  kube::ApiClientOptions api_options;
  api_options.metrics = &registry;
  api_options.kubeconfig = options.kubeconfig;
  api_options.context = options.context;
  api_options.client.qps = options.kube_qps;
  api_options.client.burst = options.kube_burst;
  GPULET_ASSIGN_OR_RETURN(std::unique_ptr<kube::ApiClient> api,
                          kube::MakeApiClient(api_options));
  kube::Client& client = api->client();
  // Before anything else starts, so that a bad address stops nothing.
  GPULET_ASSIGN_OR_RETURN(std::unique_ptr<http::Server> metrics_server,
                          ServeMetrics(settings, registry));

  GPULET_ASSIGN_OR_RETURN(nvml::LibraryPtr lib,
                          nvml::OpenLibrary(options.nvml));
  GPULET_ASSIGN_OR_RETURN(device::Node node,
                          DiscoverGpus(*lib, options.sysfs_root));
  GPULET_ASSIGN_OR_RETURN(cdi::Spec node_spec, NodeSpec(node, options));

  // Destroyed after the preparer and the server: stops the claims' MPS
  // daemons last, and the claims' status writes after the last claim.
  DraSharing sharing(SharingOptions(options));
  ClaimStatusWriter status_writer(client, driver, options.node_name, node,
                                  &dra_metrics);
  ClaimReporter reporter(&dra_metrics, &status_writer);
  dra::PreparerOptions preparer_options;
  preparer_options.sharing = &sharing;
  preparer_options.observer = &reporter;
  preparer_options.driver = driver;
  preparer_options.pool = options.node_name;
  preparer_options.checkpoint_path =
      absl::StrCat(state_dir, "/checkpoint.json");
  preparer_options.cdi_dir = options.cdi_dir;
  GPULET_ASSIGN_OR_RETURN(
      std::unique_ptr<dra::ClaimPreparer> preparer,
      dra::ClaimPreparer::Create(preparer_options, ClaimsFrom(client)));
  preparer->SetNode(node, node_spec);

  dra::DeviceHealthBoard board;
  DraHealth health(*lib, node, board);
  GPULET_RETURN_IF_ERROR(health.Start(settings.health));

  dra::DraServerOptions server_options;
  server_options.driver = driver;
  server_options.pool = options.node_name;
  server_options.registry_dir = options.registry_dir;
  server_options.plugin_dir = plugin_dir;
  GPULET_RETURN_IF_ERROR(MakeDirs(plugin_dir));
  GPULET_RETURN_IF_ERROR(MakeDirs(state_dir));
  dra::DraServer server(server_options, *preparer, board);
  GPULET_RETURN_IF_ERROR(server.Start());
  GPULET_LOG(INFO) << "dra: driver " << driver << ", node " << options.node_name
                   << ", " << node.gpus.size() << " GPUs, "
                   << preparer->Prepared().size()
                   << " claims prepared before; API server " << api->server()
                   << "; unhealthy devices "
                   << config::ToString(settings.dra.unhealthy_devices);
  // Slices are published after the kubelet can reach the driver; they
  // stay on the API server when gpulet stops (dra_slices.h).
  draslice::ApplyUnhealthyDevices(settings.dra, slice_options);
  auto slices = std::make_unique<DraSlices>(
      client, board, SliceDevices(*lib, node, options.sysfs_root),
      slice_options, &dra_metrics);
  if (options.on_serving) options.on_serving(board);
  int signo = signals->Wait();
  while (signo == SIGHUP) {
    Reload(options, health_metrics, settings, health, *slices);
    signo = signals->Wait();
  }
  GPULET_LOG(INFO) << "dra: "
                   << (signo < 0 ? "signal wait failed" : SignalName(signo))
                   << ", stopping";
  server.Stop();
  slices.reset();
  health.Stop();
  return signo < 0 ? absl::InternalError("waiting for signals failed")
                   : absl::OkStatus();
}

}  // namespace gpulet::daemon
