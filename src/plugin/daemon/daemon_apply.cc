// Daemon::Impl, the configuration side: from a configuration and a
// discovered node to served resources, at start and at every reload, and
// health events into device health (see daemon_impl.h).
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "src/model/allocation/preferred_handler.h"
#include "src/base/common/clock.h"
#include "src/base/common/errors.h"
#include "src/base/common/logging.h"
#include "src/plugin/daemon/cdi_writer.h"
#include "src/plugin/daemon/daemon_impl.h"
#include "src/gpu/device/topology.h"
#include "src/gpu/health/health_config.h"
#include "src/model/resources/passthrough.h"
#include "src/model/resources/resource_handlers.h"
#include "src/model/resources/resources.h"

namespace gpulet::daemon {
namespace {

std::vector<std::tuple<unsigned, std::string, bool>> GpuKeys(
    const device::Node& node) {
  std::vector<std::tuple<unsigned, std::string, bool>> keys;
  for (const device::Gpu& gpu : node.gpus) {
    keys.emplace_back(gpu.index, gpu.uuid, !gpu.failure.empty());
  }
  return keys;
}

// A GPU that failed discovery is a fault the monitor must probe: it may
// never have seen one (the GPU's Xid 79 dropped from a full event queue, or
// a query refused), and then nothing but the next reload would bring the
// GPU back. Its recovery starts now, as after a fault that needs no reset
// (a lost GPU must answer again first); when it recovers, the monitor's
// healthy report clears the book's discovery failure. Only the recovery
// state is seeded, not a report: the book already holds the failure, and a
// real fault before the recovery must still be reported. A GPU the monitor
// already tracks keeps its own fault.
void SeedDiscoveryFailures(const device::Node& node,
                           const health::MonitorOptions& options,
                           health::CarryOver& seed) {
  const absl::Time now = options.clock != nullptr
                             ? options.clock->Now()
                             : common::RealClock::Get().Now();
  for (const device::Gpu& gpu : node.gpus) {
    const int index = static_cast<int>(gpu.index);
    if (gpu.failure.empty() || gpu.uuid.empty() ||
        std::any_of(seed.recovery.begin(), seed.recovery.end(),
                    [&](const health::RecoveryState& r) {
                      return r.gpu == index;
                    })) {
      continue;
    }
    health::RecoveryState state;
    state.gpu = index;
    state.quiet_since = now;
    state.reason = absl::StrCat("discovery failed: ", gpu.failure);
    seed.recovery.push_back(std::move(state));
  }
}

}  // namespace

absl::StatusOr<Daemon::Impl::Loaded> Daemon::Impl::ReadConfig() {
  if (!options_.reload_config) return Loaded{config_, health_};
  absl::StatusOr<config::Config> fresh = options_.reload_config();
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
  if (fresh->metrics.address != config_.metrics.address) {
    GPULET_LOG(WARNING) << "metrics.address changed; the metrics server "
                           "keeps its address until gpulet restarts";
  }
  return Loaded{*std::move(fresh), *std::move(health)};
}

void Daemon::Impl::Reload() {
  absl::StatusOr<Loaded> fresh = ReadConfig();
  if (!fresh.ok()) {
    metrics_.config_reloads->Add({metrics::kResultError});
    return;
  }
  absl::StatusOr<device::Node> node = DiscoverNode(&node_);
  if (!node.ok()) {
    GPULET_LOG(ERROR) << "configuration not reloaded, keeping the previous "
                         "one: failed to discover GPUs: "
                      << node.status().message();
    metrics_.config_reloads->Add({metrics::kResultError});
    return;
  }
  if (absl::Status s = Apply(fresh->config, fresh->health, *node); !s.ok()) {
    GPULET_LOG(ERROR) << "configuration not reloaded, keeping the previous "
                         "one: the GPUs do not fit it: "
                      << s.message();
    metrics_.config_reloads->Add({metrics::kResultError});
    return;
  }
  config_ = std::move(fresh->config);
  health_ = std::move(fresh->health);
  metrics_.config_reloads->Add({metrics::kResultOk});
  GPULET_LOG(INFO) << "configuration reloaded";
}

// Everything that can fail, before anything changes: the resources, their
// Allocate handlers and the CDI spec.
absl::StatusOr<std::vector<Daemon::Impl::Prepared>> Daemon::Impl::Prepare(
    const config::Config& config, const device::Node& node) {
  const resources::HostView view = resources::MakeHostView(config);
  absl::StatusOr<std::vector<resources::ResourceSpec>> specs =
      resources::BuildResources(
          node, config,
          resources::MakeResourceOptions(options_.socket_prefix, view));
  if (!specs.ok()) return specs.status();
  std::vector<Prepared> prepared;
  for (resources::ResourceSpec& spec : *specs) {
    absl::StatusOr<allocation::AllocateOptions> allocate_options =
        resources::AllocateOptionsFor(config, spec, view);
    if (!allocate_options.ok()) return allocate_options.status();
    absl::StatusOr<pluginapi::AllocateHandler> allocate =
        allocation::MakeAllocateHandler(*std::move(allocate_options));
    if (!allocate.ok()) return allocate.status();
    Prepared p{std::move(spec), *std::move(allocate), nullptr};
    WrapMemoryHandlers(config, p);
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
  EnsurePublisher(config);
  PassthroughPrepared passthrough = PreparePassthrough(config);
  // A GPU selected for passthrough is never a container GPU.
  const device::Node node =
      resources::WithoutPassthrough(discovered, passthrough.plan.selected);
  absl::StatusOr<std::vector<Prepared>> prepared = Prepare(config, node);
  if (!prepared.ok()) return prepared.status();
  for (Prepared& p : passthrough.prepared) prepared->push_back(std::move(p));
  EnsureMps(config, *prepared);
  std::vector<std::string> sockets;
  for (const Prepared& p : *prepared) sockets.push_back(p.spec.socket_name);
  // Watch before the first registration so no kubelet restart is missed.
  if (absl::Status s = EnsureWatcher(sockets); !s.ok()) return s;
  RecordNode(node);
  // The health of the GPUs is watched before any device list goes out, so
  // no fault between now and the first ListAndWatch is missed.
  EnsureMonitor(health, node);
  allocation::PreferredOptions preferred_options;
  preferred_options.shared_policy =
      config.flags.plugin.shared_devices_allocation_policy ==
              config::SharedDevicesAllocationPolicy::kPacked
          ? allocation::SharedPolicy::kPacked
          : allocation::SharedPolicy::kDistributed;
  RecordPassthrough(passthrough.plan);
  auto topology = std::make_shared<TopologyRead>();
  ServeResources(*std::move(prepared),
                 PreferredOverTopology(topology, preferred_options));
  // Registered by now (or waiting to retry): the topology is read after,
  // so its thousands of NVML calls do not compete with the registration
  // round trip for the CPU.
  ReadTopologyMeanwhile(node, topology);
  EnsurePassthroughWatcher(config);
  node_ = node;
  PublishLabels(config, node);
  return absl::OkStatus();
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

// The node's GPUs into the book: UUIDs by index, GPUs gone from the node
// forgotten, and this discovery's failures replacing the previous ones.
void Daemon::Impl::RecordNode(const device::Node& node) {
  std::map<int, std::string> uuids;
  for (const device::Gpu& gpu : node.gpus) {
    if (!gpu.uuid.empty()) uuids[static_cast<int>(gpu.index)] = gpu.uuid;
    if (!gpu.failure.empty()) {
      GPULET_LOG(WARNING) << "GPU " << gpu.index << " ("
                          << (gpu.uuid.empty() ? "UUID unknown" : gpu.uuid)
                          << ") failed discovery: " << gpu.failure
                          << (gpu.uuid.empty()
                                  ? "; it cannot be advertised"
                                  : "; its devices are advertised Unhealthy");
    }
  }
  absl::MutexLock lock(&mu_);
  gpu_uuids_ = uuids;
  book_.Retain(uuids);
  book_.DropCause(health::HealthCause::kDiscoveryFailed);
  for (const device::Gpu& gpu : node.gpus) {
    if (gpu.failure.empty() || gpu.uuid.empty()) continue;
    health::HealthEvent failed;
    failed.gpu_index = static_cast<int>(gpu.index);
    failed.reason = absl::StrCat("discovery failed: ", gpu.failure);
    failed.cause = health::HealthCause::kDiscoveryFailed;
    book_.Record(gpu.uuid, failed);
  }
}

// Brings the runners to `prepared`: existing resources updated in place,
// new ones started (and registered), missing ones stopped. Device health
// comes from the book, under the same lock the health callback takes, so no
// event falls between building a list and publishing it.
void Daemon::Impl::ServeResources(std::vector<Prepared> prepared,
                                  pluginapi::PreferredHandler preferred) {
  std::vector<std::unique_ptr<PluginRunner>> removed;
  std::vector<PluginRunner*> added;
  {
    absl::MutexLock lock(&mu_);
    std::set<std::string> wanted;
    RunnerOptions runner_options{plugin_dir_, options_.kubelet_socket,
                                 options_.register_timeout, options_.backoff,
                                 &metrics_,
                                 [this] { return StopRequested(); }};
    for (Prepared& p : prepared) {
      wanted.insert(p.spec.resource_name);
      book_.Apply(gpu_uuids_, p.spec.devices);
      if (p.spec.resource_name == memory_resource_) MarkMpsDown(p.spec.devices);
      auto it = std::find_if(runners_.begin(), runners_.end(),
                             [&](const auto& r) {
                               return r->resource_name() ==
                                      p.spec.resource_name;
                             });
      pluginapi::PreferredHandler chosen =
          p.preferred ? std::move(p.preferred) : preferred;
      if (it != runners_.end()) {
        (*it)->Update(p.spec.devices, std::move(p.allocate), chosen);
        continue;
      }
      runners_.push_back(std::make_unique<PluginRunner>(
          std::move(p.spec), runner_options, std::move(p.allocate),
          std::move(chosen)));
      added.push_back(runners_.back().get());
    }
    for (auto it = runners_.begin(); it != runners_.end();) {
      if (wanted.contains((*it)->resource_name())) {
        ++it;
        continue;
      }
      metrics_.device_healthy->RemoveMatching("resource",
                                              (*it)->resource_name());
      removed.push_back(std::move(*it));
      it = runners_.erase(it);
    }
    PublishDeviceHealth();
    PublishMemoryGpus();
  }
  for (auto& runner : removed) {
    GPULET_LOG(INFO) << "no longer serving " << runner->resource_name()
                     << ": the configuration no longer has it";
  }
  removed.clear();  // stops their servers and removes their sockets
  for (PluginRunner* runner : added) runner->Start();
}

// A monitor is kept across reloads while the GPUs (and which of them failed
// discovery) and the health options stay; otherwise the next one takes over
// the previous one's state, and the GPUs that failed discovery.
void Daemon::Impl::EnsureMonitor(const health::MonitorOptions& health,
                                 const device::Node& node) {
  health::MonitorOptions options = health;
  options.metrics = &metrics_;
  const auto gpus = GpuKeys(node);
  if (monitor_ != nullptr && gpus == monitored_gpus_ &&
      options == monitored_options_) {
    return;
  }
  health::CarryOver seed;
  if (monitor_ != nullptr) {
    GPULET_LOG(INFO) << "the GPUs or the health options changed; the health "
                        "monitor restarts with the current health state";
    seed = monitor_->Stop();
    monitor_.reset();
  }
  if (options.disabled) {
    // Nothing watches the GPUs any more, so nothing could bring them back.
    absl::MutexLock lock(&mu_);
    book_.KeepOnly(health::HealthCause::kDiscoveryFailed);
  }
  SeedDiscoveryFailures(node, options, seed);
  std::vector<device::Gpu> watched;
  for (const device::Gpu& gpu : node.gpus) {
    if (!gpu.uuid.empty()) watched.push_back(gpu);
  }
  absl::StatusOr<std::unique_ptr<health::HealthMonitor>> monitor =
      health::HealthMonitor::Start(
          *lib_, watched, options,
          [this](const health::HealthEvent& e) { OnHealth(e); },
          std::move(seed));
  monitored_gpus_ = gpus;
  monitored_options_ = options;
  if (monitor.ok()) {
    monitor_ = *std::move(monitor);
  } else {
    GPULET_LOG(ERROR) << "health checks are off: "
                      << monitor.status().message();
  }
}

absl::Status Daemon::Impl::EnsureWatcher(
    const std::vector<std::string>& sockets) {
  if (watcher_ != nullptr && sockets == watched_sockets_) {
    return absl::OkStatus();
  }
  // The new watcher is running before the old one goes: no event is lost.
  absl::StatusOr<std::unique_ptr<registration::SocketWatcher>> watcher =
      registration::SocketWatcher::Create(
          plugin_dir_, kubelet_name_, sockets,
          [this](const registration::SocketEvent& e) { OnSocketEvent(e); });
  if (!watcher.ok()) return watcher.status();
  watcher_ = *std::move(watcher);
  watched_sockets_ = sockets;
  return absl::OkStatus();
}

// Reads the topology once per Apply; allocation then never touches NVML.
// Without it preferred allocation falls back to NUMA locality.
std::shared_ptr<const allocation::ScoreMatrix> Daemon::Impl::ScoreTopology(
    const device::Node& node) {
  device::Node reachable = node;
  std::erase_if(reachable.gpus,
                [](const device::Gpu& gpu) { return !gpu.failure.empty(); });
  absl::StatusOr<device::Topology> topology =
      device::BuildTopology(*lib_, reachable);
  if (!topology.ok()) {
    GPULET_LOG(WARNING) << "topology unavailable, preferred allocation "
                           "falls back to NUMA order: "
                        << topology.status().message();
    return nullptr;
  }
  GPULET_LOG(INFO) << "preferred allocation: topology-aware over "
                   << topology->size() << " GPUs";
  return std::make_shared<const allocation::ScoreMatrix>(
      allocation::BuildScoreMatrix(*topology));
}

// Reading the topology takes thousands of NVML calls (every NVLink of every
// GPU, P2P status per ordered pair: about 20 ms for 16 GPUs on the
// simulator, more where the driver reads sysfs), and only
// GetPreferredAllocation needs it, which the kubelet sends once a pod is
// scheduled. So the plugins start and register before it is read.
pluginapi::PreferredHandler Daemon::Impl::PreferredOverTopology(
    std::shared_ptr<TopologyRead> topology,
    allocation::PreferredOptions options) {
  return [topology, options](const pluginapi::DeviceSnapshot& snapshot,
                             const std::vector<std::string>& available,
                             const std::vector<std::string>& must_include,
                             int size) {
    topology->read.WaitForNotification();
    return allocation::PreferredAllocation(topology->matrix, options,
                                           snapshot, available, must_include,
                                           size);
  };
}

void Daemon::Impl::ReadTopologyMeanwhile(
    const device::Node& node, std::shared_ptr<TopologyRead> topology) {
  JoinTopology();
  topology_thread_ = std::jthread([this, node, topology] {
    topology->matrix = ScoreTopology(node);
    topology->read.Notify();
  });
}

void Daemon::Impl::JoinTopology() {
  if (topology_thread_.joinable()) topology_thread_.join();
}

// Every advertised device's health as gpulet_device_healthy.
void Daemon::Impl::PublishDeviceHealth(int gpu_index) {
  for (auto& runner : runners_) {
    const std::string& resource = runner->resource_name();
    for (const pluginapi::Device& d : runner->devices().Snapshot()->devices) {
      if (gpu_index >= 0 && d.gpu_index != gpu_index) continue;
      metrics_.device_healthy->Set({resource, d.id},
                                   metrics::HealthValue(d.healthy));
    }
  }
}

// On the monitor's thread. An event NVML attributes to one MIG instance
// changes only that MIG device (and its replicas); anything else, or a MIG
// event no advertised device matches (migStrategy none), changes every
// device of the GPU: the GPU itself, its replicas and its MIG devices. The
// book keeps the event for device lists a reload builds later.
void Daemon::Impl::OnHealth(const health::HealthEvent& event) {
  absl::MutexLock lock(&mu_);
  int changed = 0;
  bool mig_scoped = false;
  if (event.gpu_instance_id.has_value()) {
    const int gi = static_cast<int>(*event.gpu_instance_id);
    for (auto& runner : runners_) {
      for (const pluginapi::Device& d : runner->devices().Snapshot()->devices) {
        mig_scoped |= d.gpu_index == event.gpu_index && d.gpu_instance_id == gi;
      }
    }
  }
  auto uuid = gpu_uuids_.find(event.gpu_index);
  if (uuid != gpu_uuids_.end()) {
    health::HealthEvent recorded = event;
    if (!mig_scoped) {
      recorded.gpu_instance_id.reset();
      recorded.compute_instance_id.reset();
    }
    book_.Record(uuid->second, recorded);
  }
  for (auto& runner : runners_) {
    if (mig_scoped) {
      changed += runner->devices().SetMigHealth(
          event.gpu_index, static_cast<int>(*event.gpu_instance_id),
          event.compute_instance_id.has_value()
              ? static_cast<int>(*event.compute_instance_id)
              : -1,
          event.healthy);
    } else if (mps_enabled_ && uuid != gpu_uuids_.end() &&
               runner->resource_name() == memory_resource_) {
      // The book's health, then MPS's: a recovered GPU's memory units stay
      // down while its MPS daemon is.
      changed += ApplyMpsHealth(uuid->second);
    } else {
      changed += runner->devices().SetGpuHealth(event.gpu_index, event.healthy);
    }
  }
  if (changed > 0) {
    PublishDeviceHealth(event.gpu_index);
    PublishMemoryGpus();
  }
  std::string gpu = absl::StrCat(
      "GPU ", event.gpu_index, " (",
      uuid == gpu_uuids_.end() ? std::string("unknown") : uuid->second, ")");
  if (event.gpu_instance_id.has_value()) {
    absl::StrAppend(&gpu, " MIG GI ", *event.gpu_instance_id, " CI ",
                    event.compute_instance_id.value_or(0));
  }
  const char* state = event.healthy ? "healthy" : "unhealthy";
  if (changed > 0 && event.healthy) {
    GPULET_LOG(INFO) << gpu << " recovered: " << event.reason << "; " << changed
                     << " device(s) marked healthy";
  } else if (changed > 0) {
    GPULET_LOG(WARNING) << gpu << " is unhealthy: " << event.reason << "; "
                        << changed << " device(s) marked unhealthy";
  } else {
    GPULET_VLOG(1) << gpu << " is " << state << ": " << event.reason
                   << " (no change)";
  }
}

}  // namespace gpulet::daemon
