// Daemon::Impl, the configuration side: from a configuration and a
// discovered node to served resources, at start, at every reload and at a
// passthrough re-plan (see daemon_impl.h).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/base/common/errors.h"
#include "src/base/common/logging.h"
#include "src/gpu/health/health_config.h"
#include "src/model/allocation/preferred_handler.h"
#include "src/model/resources/passthrough.h"
#include "src/model/resources/resource_handlers.h"
#include "src/model/resources/resources.h"
#include "src/plugin/daemon/cdi_writer.h"
#include "src/plugin/daemon/daemon_impl.h"

namespace gpulet::daemon {
namespace {

allocation::PreferredOptions PreferredOptionsOf(const config::Config& config) {
  allocation::PreferredOptions options;
  options.shared_policy =
      config.flags.plugin.shared_devices_allocation_policy ==
              config::SharedDevicesAllocationPolicy::kPacked
          ? allocation::SharedPolicy::kPacked
          : allocation::SharedPolicy::kDistributed;
  return options;
}

}  // namespace

absl::StatusOr<Daemon::Impl::Loaded> Daemon::Impl::ReadConfig() {
  if (!options_.reload_config) return Loaded{config_, health_};
  absl::StatusOr<config::Config> fresh = options_.reload_config(ConfigFile());
  if (!fresh.ok()) {
    GPULET_LOG(ERROR) << "configuration not reloaded, keeping the previous "
                         "one: "
                      << fresh.status().message();
    return fresh.status();
  }
  absl::StatusOr<health::MonitorOptions> health =
      health::OptionsFromConfig(fresh->health, config::ProcessEnvironment());
  if (!health.ok()) {
    GPULET_LOG(ERROR) << "configuration not reloaded, keeping the previous "
                         "one: "
                      << health.status().message();
    return health.status();
  }
  if (fresh->metrics != config_.metrics) {
    GPULET_LOG(WARNING) << "metrics.* changed; the metrics server keeps its "
                           "address and TLS files until gpulet restarts";
  }
  return Loaded{*std::move(fresh), *std::move(health)};
}

std::optional<std::string> Daemon::Impl::ConfigFile() const {
  if (!options_.node_config.enabled()) return std::nullopt;
  return node_config_choice_.file;
}

bool Daemon::Impl::Reload() {
  absl::StatusOr<Loaded> fresh = ReadConfig();
  if (!fresh.ok()) {
    metrics_.gpulet()->config_reloads->Add({metrics::kResultError});
    return false;
  }
  absl::StatusOr<device::Node> node = DiscoverNode(&node_);
  if (!node.ok()) {
    GPULET_LOG(ERROR) << "configuration not reloaded, keeping the previous "
                         "one: failed to discover GPUs: "
                      << node.status().message();
    metrics_.gpulet()->config_reloads->Add({metrics::kResultError});
    return false;
  }
  if (absl::Status s = Apply(fresh->config, fresh->health, *node); !s.ok()) {
    GPULET_LOG(ERROR) << "configuration not reloaded, keeping the previous "
                         "one: the GPUs do not fit it: "
                      << s.message();
    metrics_.gpulet()->config_reloads->Add({metrics::kResultError});
    return false;
  }
  config_ = std::move(fresh->config);
  health_ = std::move(fresh->health);
  metrics_.gpulet()->config_reloads->Add({metrics::kResultOk});
  GPULET_LOG(INFO) << "configuration reloaded";
  return true;
}

// Everything that can fail, before anything changes: the resources, their
// Allocate handlers and the CDI spec.
absl::StatusOr<std::vector<PreparedResource>> Daemon::Impl::Prepare(
    const config::Config& config, const device::Node& node) {
  const resources::HostView view = resources::MakeHostView(config);
  absl::StatusOr<std::vector<resources::ResourceSpec>> specs =
      resources::BuildResources(
          node, config,
          resources::MakeResourceOptions(options_.socket_prefix, view));
  if (!specs.ok()) return specs.status();
  std::vector<PreparedResource> prepared;
  for (resources::ResourceSpec& spec : *specs) {
    absl::StatusOr<allocation::AllocateOptions> allocate_options =
        resources::AllocateOptionsFor(config, spec, view);
    if (!allocate_options.ok()) return allocate_options.status();
    absl::StatusOr<pluginapi::AllocateHandler> allocate =
        allocation::MakeAllocateHandler(*std::move(allocate_options));
    if (!allocate.ok()) return allocate.status();
    PreparedResource p{std::move(spec), *std::move(allocate)};
    memory_.WrapHandlers(config, p);
    prepared.push_back(std::move(p));
  }
  if (WantsCdiSpec(config)) {
    absl::StatusOr<std::string> written =
        WriteCdiSpec(node, config, view, options_.cdi_spec_dir);
    if (!written.ok()) {
      return common::Annotate(written.status(),
                              "cannot write the CDI spec the cdi strategies "
                              "name");
    }
    GPULET_LOG(INFO) << "wrote CDI spec " << *written;
  }
  return prepared;
}

absl::Status Daemon::Impl::Apply(const config::Config& config,
                                 const health::MonitorOptions& health,
                                 const device::Node& discovered) {
  memory_.Ensure(config);
  PassthroughGpus::Planned passthrough = passthrough_.Prepare(config);
  // A GPU selected for passthrough is never a container GPU.
  const device::Node node =
      resources::WithoutPassthrough(discovered, passthrough.plan.selected);
  absl::StatusOr<std::vector<PreparedResource>> prepared =
      Prepare(config, node);
  if (!prepared.ok()) return prepared.status();
  for (PreparedResource& p : passthrough.prepared) {
    prepared->push_back(std::move(p));
  }
  mps_.Ensure(config, *prepared, node);
  std::vector<std::string> sockets;
  for (const PreparedResource& p : *prepared) {
    sockets.push_back(p.spec.socket_name);
  }
  // Watch before the first registration so no kubelet restart is missed.
  if (absl::Status s = wake_.Watch(sockets); !s.ok()) return s;
  served_.RecordNode(node);
  // The health of the GPUs is watched before any device list goes out, so
  // no fault between now and the first ListAndWatch is missed.
  monitor_.Ensure(*lib_, health, node);
  passthrough_.Record(passthrough.plan);
  auto topology = std::make_shared<TopologyReader::Read>();
  served_.Serve(
      *std::move(prepared),
      TopologyReader::HandlerOver(topology, PreferredOptionsOf(config)),
      MakeRunnerOptions(), passthrough_.Health());
  // Registered by now (or waiting to retry): the topology is read after,
  // so its thousands of NVML calls do not compete with the registration
  // round trip for the CPU.
  topology_.ReadMeanwhile(*lib_, node, topology);
  passthrough_.EnsureWatcher(config);
  node_ = node;
  PublishLabels(config, node);
  return absl::OkStatus();
}

void Daemon::Impl::ReplanPassthrough() {
  if (!passthrough_.BeginReplan()) return;
  const config::Config config = config_;
  const device::Node node = node_;
  absl::Status s = Apply(config, health_, node);
  passthrough_.EndReplan();
  if (!s.ok()) {
    GPULET_LOG(ERROR) << "passthrough: the resources were not planned again "
                         "after a binding change: "
                      << s.message();
  }
}

void Daemon::Impl::PublishLabels(const config::Config& config,
                                 const device::Node& node) {
  if (labels_ == nullptr) return;
  absl::StatusOr<labels::Labels> published = labels_->Publish(node, config);
  if (!published.ok()) {
    GPULET_LOG(ERROR) << published.status().message();
    return;
  }
  GPULET_VLOG(1) << "node labels computed: " << published->size();
}

}  // namespace gpulet::daemon
