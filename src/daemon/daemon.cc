#include "src/daemon/daemon.h"

#include <malloc.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "src/allocation/score.h"
#include "src/allocation/preferred_handler.h"
#include "src/common/errors.h"
#include "src/common/logging.h"
#include "src/daemon/cdi_writer.h"
#include "src/daemon/plugin_runner.h"
#include "src/daemon/resource_handlers.h"
#include "src/daemon/resources.h"
#include "src/daemon/signal_channel.h"
#include "src/device/discovery.h"
#include "src/device/nvml_error_kind.h"
#include "src/device/topology.h"
#include "src/health/health_config.h"
#include "src/health/health_monitor.h"
#include "src/metrics/metrics_server.h"
#include "src/metrics/registry.h"
#include "src/nvml/dynamic_library.h"
#include "src/registration/socket_watcher.h"
#include "src/common/unique_fd.h"

namespace gpulet::daemon {
namespace {

enum class End { kExit, kReload };
struct SessionEnd {
  End end = End::kExit;
  int exit_code = 0;
};

// Plain string splitting: std::filesystem::path and string assignment from
// a literal here trip GCC 12's -Wrestrict false positive at -O2.
std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return std::string(1, '.');
  return path.substr(0, slash == 0 ? 1 : slash);
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

class Daemon::Impl {
 public:
  explicit Impl(DaemonOptions options)
      : options_(std::move(options)),
        config_(options_.config),
        health_(options_.health),
        plugin_dir_(DirName(options_.kubelet_socket)),
        kubelet_name_(BaseName(options_.kubelet_socket)) {}

  int Run();

 private:
  SessionEnd RunSession(SignalChannel& signals);
  absl::StatusOr<device::Node> LoadNode();
  SessionEnd InitFailed(const std::string& message, SignalChannel& signals);
  absl::Status StartSession(const device::Node& node);
  std::shared_ptr<const allocation::ScoreMatrix> ScoreTopology(
      const device::Node& node);
  SessionEnd Loop(SignalChannel& signals);
  void StopSession();
  void ShutdownNvml();
  int PollTimeoutMs() const;
  void OnSocketEvent(const registration::SocketEvent& event);
  void HandleWake();
  void OnHealth(const health::HealthEvent& event);

  void ReloadConfig();
  absl::Status StartMetrics();
  // gpu_index < 0: every device; else only that GPU's devices.
  void PublishDeviceHealth(int gpu_index = -1);

  const DaemonOptions options_;
  config::Config config_;
  health::MonitorOptions health_;
  // Process-wide, across reloads.
  metrics::Registry registry_;
  metrics::GpuletMetrics metrics_;
  std::unique_ptr<metrics::MetricsServer> metrics_server_;
  std::string plugin_dir_;
  std::string kubelet_name_;
  nvml::LibraryPtr lib_;
  bool nvml_initialized_ = false;
  // Written before the watcher and monitor threads start, read-only while
  // they run, cleared after they stop.
  std::vector<std::unique_ptr<PluginRunner>> runners_;
  std::map<int, std::string> gpu_uuids_;
  std::unique_ptr<registration::SocketWatcher> watcher_;
  std::unique_ptr<health::HealthMonitor> monitor_;
  // The watcher's thread hands events to the loop through `pending_` and
  // wakes it with this eventfd.
  common::UniqueFd wake_;
  absl::Mutex mu_;
  registration::SocketEvent pending_ ABSL_GUARDED_BY(mu_);
};

Daemon::Daemon(DaemonOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
Daemon::~Daemon() = default;
int Daemon::Run() { return impl_->Run(); }

int Daemon::Impl::Run() {
  // First, before NVML, gRPC or any of our own threads exist.
  absl::StatusOr<std::unique_ptr<SignalChannel>> signals =
      SignalChannel::Create();
  if (!signals.ok()) {
    GPULET_LOG(ERROR) << signals.status().message();
    return 1;
  }
  wake_ = common::UniqueFd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_.valid()) {
    GPULET_LOG(ERROR) << common::ErrnoToStatus(errno, "eventfd").message();
    return 1;
  }
  // gRPC's server threads each keep a malloc arena of freed request
  // buffers; two arenas keep a burst of large requests from growing the
  // resident set by megabytes.
  ::mallopt(M_ARENA_MAX, 2);
  if (absl::Status s = StartMetrics(); !s.ok()) {
    GPULET_LOG(ERROR) << s.message();
    return 1;
  }
  while (true) {
    SessionEnd end = RunSession(**signals);
    if (end.end == End::kExit) return end.exit_code;
    ReloadConfig();
  }
}

void Daemon::Impl::ReloadConfig() {
  if (!options_.reload_config) return;
  absl::StatusOr<config::Config> fresh = options_.reload_config();
  if (!fresh.ok()) {
    GPULET_LOG(ERROR) << "configuration not reloaded, keeping the previous "
                         "one: "
                      << fresh.status().message();
    return;
  }
  absl::StatusOr<health::MonitorOptions> health =
      health::OptionsFromConfig(fresh->health, config::ProcessEnvironment());
  if (!health.ok()) {
    GPULET_LOG(ERROR) << "configuration not reloaded, keeping the previous "
                         "one: "
                      << health.status().message();
    return;
  }
  if (fresh->metrics.address != config_.metrics.address) {
    GPULET_LOG(WARNING) << "metrics.address changed; the metrics server "
                           "keeps its address until gpulet restarts";
  }
  config_ = *std::move(fresh);
  health_ = *std::move(health);
  GPULET_LOG(INFO) << "configuration reloaded";
}

absl::Status Daemon::Impl::StartMetrics() {
  absl::StatusOr<metrics::GpuletMetrics> m =
      metrics::GpuletMetrics::Register(registry_);
  if (!m.ok()) return m.status();
  metrics_ = *m;
  const std::string& address = config_.metrics.address;
  if (address.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<metrics::MetricsServer>> server =
      metrics::MetricsServer::Start(address, registry_);
  if (!server.ok()) {
    return common::Annotate(server.status(), "cannot serve metrics");
  }
  metrics_server_ = *std::move(server);
  GPULET_LOG(INFO) << "serving /metrics on " << metrics_server_->host() << ":"
                   << metrics_server_->port();
  return absl::OkStatus();
}

// Every advertised device's health as gpulet_device_healthy; called on the
// thread that changed it, while the runners exist. A session's device IDs
// never change, so samples are only set here; StopSession removes them.
void Daemon::Impl::PublishDeviceHealth(int gpu_index) {
  for (auto& runner : runners_) {
    const std::string& resource = runner->resource_name();
    for (const plugin::Device& d : runner->devices().Snapshot()->devices) {
      if (gpu_index >= 0 && d.gpu_index != gpu_index) continue;
      metrics_.device_healthy->Set({resource, d.id},
                                   metrics::HealthValue(d.healthy));
    }
  }
}

SessionEnd Daemon::Impl::RunSession(SignalChannel& signals) {
  absl::StatusOr<device::Node> node = LoadNode();
  if (!node.ok())
    return InitFailed(std::string(node.status().message()), signals);
  if (node->gpus.empty()) return InitFailed("No devices found", signals);
  GPULET_LOG(INFO) << "found " << node->gpus.size() << " GPUs (driver "
                   << node->driver_version << ", NVML " << lib_->Path() << ")";
  absl::Status started = StartSession(*node);
  SessionEnd end;
  if (started.ok()) {
    end = Loop(signals);
  } else {
    GPULET_LOG(ERROR) << started.message();
    end = SessionEnd{End::kExit, 1};
  }
  StopSession();
  return end;
}

absl::StatusOr<device::Node> Daemon::Impl::LoadNode() {
  // The library stays loaded across reloads; only Init/Shutdown repeat.
  if (lib_ == nullptr) {
    absl::StatusOr<nvml::LibraryPtr> lib = nvml::OpenLibrary(options_.nvml);
    if (!lib.ok()) return common::Annotate(lib.status(), "failed to load NVML");
    lib_ = *std::move(lib);
  }
  absl::Status init = lib_->Init();
  if (device::IsNvmlGpuNotFound(init)) return device::Node{};
  if (!init.ok()) return common::Annotate(init, "failed to initialize NVML");
  nvml_initialized_ = true;
  absl::StatusOr<device::Node> node =
      device::Discover(*lib_, device::DiscoveryOptions{options_.sysfs_root});
  if (!node.ok()) {
    return common::Annotate(node.status(), "failed to discover GPUs");
  }
  return node;
}

SessionEnd Daemon::Impl::InitFailed(const std::string& message,
                                    SignalChannel& signals) {
  ShutdownNvml();
  if (options_.fail_on_init_error) {
    GPULET_LOG(ERROR) << message
                      << "; exiting (failOnInitError=true; set "
                         "--fail-on-init-error=false to wait instead)";
    return SessionEnd{End::kExit, 1};
  }
  GPULET_LOG(ERROR) << message
                    << "; waiting indefinitely (failOnInitError=false)";
  int signo = signals.Wait();
  if (signo == SIGHUP) {
    GPULET_LOG(INFO) << "received SIGHUP; starting again";
    return SessionEnd{End::kReload, 0};
  }
  GPULET_LOG(INFO) << "received " << SignalName(signo) << "; exiting";
  return SessionEnd{End::kExit, 0};
}

absl::Status Daemon::Impl::StartSession(const device::Node& node) {
  for (const device::Gpu& gpu : node.gpus) {
    gpu_uuids_[static_cast<int>(gpu.index)] = gpu.uuid;
  }
  RunnerOptions runner_options{plugin_dir_, options_.kubelet_socket,
                               options_.register_timeout, options_.backoff,
                               &metrics_};
  const HostView view = MakeHostView(config_);
  absl::StatusOr<std::vector<ResourceSpec>> specs = BuildResources(
      node, config_, MakeResourceOptions(options_.socket_prefix, view));
  if (!specs.ok()) {
    return common::Annotate(specs.status(),
                            "the GPUs do not fit the configuration");
  }
  if (WantsCdiSpec(config_)) {
    absl::StatusOr<std::string> written =
        WriteCdiSpec(node, config_, view, options_.cdi_spec_dir);
    if (!written.ok()) {
      return common::Annotate(written.status(),
                              "cannot write the CDI spec the cdi strategies "
                              "name");
    }
    GPULET_LOG(INFO) << "wrote CDI spec " << *written;
  }
  allocation::PreferredOptions preferred_options;
  preferred_options.shared_policy =
      config_.flags.plugin.shared_devices_allocation_policy ==
              config::SharedDevicesAllocationPolicy::kPacked
          ? allocation::SharedPolicy::kPacked
          : allocation::SharedPolicy::kDistributed;
  plugin::PreferredHandler preferred =
      allocation::MakePreferredHandler(ScoreTopology(node), preferred_options);
  std::vector<std::string> sockets;
  for (ResourceSpec& spec : *specs) {
    absl::StatusOr<plugin::AllocateOptions> allocate_options =
        AllocateOptionsFor(config_, spec, view);
    if (!allocate_options.ok()) return allocate_options.status();
    absl::StatusOr<plugin::AllocateHandler> allocate =
        plugin::MakeAllocateHandler(*std::move(allocate_options));
    if (!allocate.ok()) return allocate.status();
    sockets.push_back(spec.socket_name);
    runners_.push_back(std::make_unique<PluginRunner>(
        std::move(spec), runner_options, *std::move(allocate), preferred));
  }
  // Watch before the first registration so no kubelet restart is missed.
  absl::StatusOr<std::unique_ptr<registration::SocketWatcher>> watcher =
      registration::SocketWatcher::Create(
          plugin_dir_, kubelet_name_, sockets,
          [this](const registration::SocketEvent& e) { OnSocketEvent(e); });
  if (!watcher.ok()) return watcher.status();
  watcher_ = *std::move(watcher);
  for (auto& runner : runners_) runner->Start();
  PublishDeviceHealth();
  health::MonitorOptions health = health_;
  health.metrics = &metrics_;
  absl::StatusOr<std::unique_ptr<health::HealthMonitor>> monitor =
      health::HealthMonitor::Start(
          *lib_, node.gpus, health,
          [this](const health::HealthEvent& e) { OnHealth(e); });
  if (monitor.ok()) {
    monitor_ = *std::move(monitor);
  } else {
    GPULET_LOG(ERROR) << "health checks are off: "
                      << monitor.status().message();
  }
  return absl::OkStatus();
}

// Reads the topology once per session; allocation then never touches NVML.
// Without it preferred allocation falls back to NUMA locality.
std::shared_ptr<const allocation::ScoreMatrix> Daemon::Impl::ScoreTopology(
    const device::Node& node) {
  absl::StatusOr<device::Topology> topology =
      device::BuildTopology(*lib_, node);
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

SessionEnd Daemon::Impl::Loop(SignalChannel& signals) {
  while (true) {
    pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (::poll(fds, 2, PollTimeoutMs()) < 0 && errno != EINTR) {
      GPULET_LOG(ERROR) << common::ErrnoToStatus(errno, "poll").message();
      return SessionEnd{End::kExit, 1};
    }
    if (int signo = signals.Read(); signo != 0) {
      if (signo == SIGHUP) {
        GPULET_LOG(INFO) << "received SIGHUP; reloading";
        return SessionEnd{End::kReload, 0};
      }
      GPULET_LOG(INFO) << "received " << SignalName(signo) << "; shutting down";
      return SessionEnd{End::kExit, 0};
    }
    if (fds[1].revents & POLLIN) HandleWake();
    absl::Time now = absl::Now();
    for (auto& runner : runners_) runner->RetryIfDue(now);
  }
}

void Daemon::Impl::StopSession() {
  // Monitor and watcher first: no callback may run while runners go away.
  monitor_.reset();
  watcher_.reset();
  for (auto& runner : runners_) {
    metrics_.device_healthy->RemoveMatching("resource", runner->resource_name());
  }
  runners_.clear();
  gpu_uuids_.clear();
  uint64_t ignored;
  (void)!::read(wake_.get(), &ignored, sizeof(ignored));
  {
    absl::MutexLock lock(&mu_);
    pending_ = registration::SocketEvent{};
  }
  ShutdownNvml();
  GPULET_LOG(INFO) << "stopped serving; sockets removed";
}

void Daemon::Impl::ShutdownNvml() {
  if (!nvml_initialized_) return;
  nvml_initialized_ = false;
  if (absl::Status s = lib_->Shutdown(); !s.ok()) {
    GPULET_LOG(WARNING) << s.message();
  }
}

int Daemon::Impl::PollTimeoutMs() const {
  std::optional<absl::Time> next;
  for (const auto& runner : runners_) {
    std::optional<absl::Time> at = runner->retry_at();
    if (at.has_value() && (!next.has_value() || *at < *next)) next = at;
  }
  if (!next.has_value()) return -1;
  absl::Duration wait = std::max(*next - absl::Now(), absl::ZeroDuration());
  // Round up so the loop does not wake a moment early and spin.
  return static_cast<int>(
      absl::ToInt64Milliseconds(absl::Ceil(wait, absl::Milliseconds(1))));
}

void Daemon::Impl::OnSocketEvent(const registration::SocketEvent& event) {
  {
    absl::MutexLock lock(&mu_);
    pending_.kubelet_socket_created |= event.kubelet_socket_created;
    for (const std::string& name : event.deleted) {
      if (std::find(pending_.deleted.begin(), pending_.deleted.end(), name) ==
          pending_.deleted.end()) {
        pending_.deleted.push_back(name);
      }
    }
  }
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof(one));
}

void Daemon::Impl::HandleWake() {
  uint64_t count;
  (void)!::read(wake_.get(), &count, sizeof(count));
  registration::SocketEvent event;
  {
    absl::MutexLock lock(&mu_);
    std::swap(event, pending_);
  }
  for (const std::string& name : event.deleted) {
    GPULET_VLOG(1) << "socket watcher: " << name << " deleted";
  }
  if (event.kubelet_socket_created) {
    GPULET_VLOG(1) << "socket watcher: " << kubelet_name_ << " created";
    metrics_.kubelet_restarts->Add({});
  }
  for (auto& runner : runners_) runner->Reconcile(event.kubelet_socket_created);
}

// On the monitor's thread. An event NVML attributes to one MIG instance
// changes only that MIG device (and its replicas); anything else, or a MIG
// event no advertised device matches (migStrategy none), changes every
// device of the GPU: the GPU itself, its replicas and its MIG devices.
void Daemon::Impl::OnHealth(const health::HealthEvent& event) {
  int changed = 0;
  bool mig_scoped = false;
  if (event.gpu_instance_id.has_value()) {
    const int gi = static_cast<int>(*event.gpu_instance_id);
    for (auto& runner : runners_) {
      for (const plugin::Device& d : runner->devices().Snapshot()->devices) {
        mig_scoped |= d.gpu_index == event.gpu_index && d.gpu_instance_id == gi;
      }
    }
  }
  if (mig_scoped) {
    for (auto& runner : runners_) {
      changed += runner->devices().SetMigHealth(
          event.gpu_index, static_cast<int>(*event.gpu_instance_id),
          event.compute_instance_id.has_value()
              ? static_cast<int>(*event.compute_instance_id)
              : -1,
          event.healthy);
    }
  }
  if (!mig_scoped) {
    for (auto& runner : runners_) {
      changed += runner->devices().SetGpuHealth(event.gpu_index, event.healthy);
    }
  }
  if (changed > 0) PublishDeviceHealth(event.gpu_index);
  auto uuid = gpu_uuids_.find(event.gpu_index);
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
