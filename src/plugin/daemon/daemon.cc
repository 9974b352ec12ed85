#include "src/plugin/daemon/daemon.h"

#include <malloc.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "src/base/common/clock.h"
#include "src/base/common/errors.h"
#include "src/base/common/logging.h"
#include "src/plugin/daemon/daemon_impl.h"
#include "src/gpu/device/discovery.h"
#include "src/gpu/device/nvml_error_kind.h"
#include "src/gpu/nvml/dynamic_library.h"

namespace gpulet::daemon {
namespace {

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

Daemon::Impl::Impl(DaemonOptions options)
    : options_(std::move(options)),
      config_(options_.config),
      health_(options_.health),
      plugin_dir_(DirName(options_.kubelet_socket)),
      kubelet_name_(BaseName(options_.kubelet_socket)) {}

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
  signals_ = signals->get();
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
  if (options_.labels.enabled()) {
    kube::Client* api = nullptr;
    if (!options_.labels.node_name.empty()) {
      absl::StatusOr<kube::Client*> client = ApiClient();
      if (!client.ok()) {
        GPULET_LOG(ERROR) << "cannot patch the labels of node "
                          << options_.labels.node_name << ": "
                          << client.status().message();
        return 1;
      }
      api = *client;
    }
    absl::StatusOr<std::unique_ptr<LabelPublisher>> labels =
        LabelPublisher::Create(options_.labels, api);
    if (!labels.ok()) {
      GPULET_LOG(ERROR) << labels.status().message();
      return 1;
    }
    labels_ = *std::move(labels);
  }
  while (true) {
    SessionEnd end = RunSession(**signals);
    if (end.end == End::kExit) return end.exit_code;
    // Only a session that never started serving ends with a reload: read
    // the file again and start from scratch.
    if (absl::StatusOr<Loaded> fresh = ReadConfig(); fresh.ok()) {
      config_ = std::move(fresh->config);
      health_ = std::move(fresh->health);
    }
  }
}

absl::Status Daemon::Impl::StartMetrics() {
  absl::StatusOr<metrics::GpuletMetrics> m =
      metrics::GpuletMetrics::Register(registry_);
  if (!m.ok()) return m.status();
  metrics_ = *m;
  // Counters without labels exist from the start, at 0.
  metrics_.kubelet_restarts->Add({}, 0);
  metrics_.config_reloads->Add({metrics::kResultOk}, 0);
  metrics_.config_reloads->Add({metrics::kResultError}, 0);
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

SessionEnd Daemon::Impl::RunSession(SignalChannel& signals) {
  absl::StatusOr<device::Node> node = LoadNode();
  if (!node.ok())
    return InitFailed(std::string(node.status().message()), signals);
  if (node->gpus.empty()) return InitFailed("No devices found", signals);
  GPULET_LOG(INFO) << "found " << node->gpus.size() << " GPUs (driver "
                   << node->driver_version << ", NVML " << lib_->Path() << ")";
  absl::Status started = Apply(config_, health_, *node);
  SessionEnd end;
  if (started.ok()) {
    end = Loop(signals);
  } else {
    GPULET_LOG(ERROR) << "the GPUs do not fit the configuration: "
                      << started.message();
    end = SessionEnd{End::kExit, 1};
  }
  StopSession();
  return end;
}

absl::StatusOr<device::Node> Daemon::Impl::LoadNode() {
  // The library stays loaded, and initialised, while the process serves.
  if (lib_ == nullptr) {
    absl::StatusOr<nvml::LibraryPtr> lib = nvml::OpenLibrary(options_.nvml);
    if (!lib.ok()) return common::Annotate(lib.status(), "failed to load NVML");
    lib_ = *std::move(lib);
  }
  absl::Status init = lib_->Init();
  if (device::IsNvmlGpuNotFound(init)) return device::Node{};
  if (!init.ok()) return common::Annotate(init, "failed to initialize NVML");
  nvml_initialized_ = true;
  absl::StatusOr<device::Node> node = DiscoverNode(nullptr);
  if (!node.ok()) {
    return common::Annotate(node.status(), "failed to discover GPUs");
  }
  return node;
}

absl::StatusOr<device::Node> Daemon::Impl::DiscoverNode(
    const device::Node* previous) {
  device::DiscoveryOptions discovery{options_.sysfs_root};
  // One GPU failing (lost, or some query refused) does not stop the others
  // from being served: it is advertised Unhealthy with the reason.
  discovery.tolerate_gpu_failures = true;
  discovery.previous = previous;
  return device::Discover(*lib_, discovery);
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
  int signo = TakeSignal();
  if (signo == 0) signo = signals.Wait();
  if (signo < 0) {
    const absl::Status failed =
        common::ErrnoToStatus(errno, "waiting for signals");
    GPULET_LOG(ERROR) << failed.message() << "; exiting";
    return SessionEnd{End::kExit, 1};
  }
  if (signo == SIGHUP) {
    GPULET_LOG(INFO) << "received SIGHUP; starting again";
    return SessionEnd{End::kReload, 0};
  }
  GPULET_LOG(INFO) << "received " << SignalName(signo) << "; exiting";
  return SessionEnd{End::kExit, 0};
}

std::vector<PluginRunner*> Daemon::Impl::Runners() {
  absl::MutexLock lock(&mu_);
  std::vector<PluginRunner*> out;
  out.reserve(runners_.size());
  for (auto& runner : runners_) out.push_back(runner.get());
  return out;
}

int Daemon::Impl::TakeSignal() {
  int signo = stashed_signal_;
  stashed_signal_ = 0;
  return signo != 0 ? signo : signals_->Read();
}

bool Daemon::Impl::StopRequested() {
  auto stopping = [](int signo) { return signo == SIGTERM || signo == SIGINT; };
  if (!stopping(stashed_signal_)) {
    if (int signo = signals_->Read(); signo != 0) {
      // A stop outranks a reload still waiting to be handled.
      if (stashed_signal_ == 0 || stopping(signo)) stashed_signal_ = signo;
    }
  }
  return stopping(stashed_signal_);
}

SessionEnd Daemon::Impl::Loop(SignalChannel& signals) {
  while (true) {
    pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    const int timeout = stashed_signal_ != 0 ? 0 : PollTimeoutMs();
    if (::poll(fds, 2, timeout) < 0 && errno != EINTR) {
      GPULET_LOG(ERROR) << common::ErrnoToStatus(errno, "poll").message();
      return SessionEnd{End::kExit, 1};
    }
    if (int signo = TakeSignal(); signo != 0) {
      if (signo == SIGHUP) {
        GPULET_LOG(INFO) << "received SIGHUP; reloading the configuration";
        Reload();
        continue;
      }
      GPULET_LOG(INFO) << "received " << SignalName(signo) << "; shutting down";
      return SessionEnd{End::kExit, 0};
    }
    if (fds[1].revents & POLLIN) HandleWake();
    absl::Time now = common::RealClock::Get().Now();
    for (PluginRunner* runner : Runners()) runner->RetryIfDue(now);
  }
}

void Daemon::Impl::StopSession() {
  // Streams end first, so the kubelet hears of the stop at once; the
  // runners themselves stay until no callback can reach them.
  for (PluginRunner* runner : Runners()) runner->Stop();
  StopPassthroughWatcher();
  passthrough_watcher_key_.clear();
  watcher_.reset();
  watched_sockets_.clear();
  if (monitor_ != nullptr) monitor_->Stop();
  monitor_.reset();
  monitored_gpus_.clear();
  mps_.reset();  // each MPS control daemon is told to quit
  mps_key_.clear();
  std::vector<std::unique_ptr<PluginRunner>> runners;
  {
    absl::MutexLock lock(&mu_);
    for (auto& runner : runners_) {
      metrics_.device_healthy->RemoveMatching("resource",
                                              runner->resource_name());
    }
    runners.swap(runners_);
    gpu_uuids_.clear();
    book_.Clear();
    mps_enabled_ = false;
    mps_up_.clear();
    passthrough_resources_.clear();
    passthrough_health_.clear();
    passthrough_mdevs_.clear();
    passthrough_selected_.clear();
    passthrough_replan_ = false;
    pending_ = registration::SocketEvent{};
  }
  runners.clear();
  {
    absl::MutexLock lock(&mu_);
    publisher_.reset();
    publisher_started_ = false;
  }
  node_ = device::Node{};
  uint64_t ignored;
  (void)!::read(wake_.get(), &ignored, sizeof(ignored));
  ShutdownNvml();
  GPULET_LOG(INFO) << "stopped serving; sockets removed";
}

void Daemon::Impl::ShutdownNvml() {
  JoinTopology();
  if (!nvml_initialized_) return;
  nvml_initialized_ = false;
  if (absl::Status s = lib_->Shutdown(); !s.ok()) {
    GPULET_LOG(WARNING) << s.message();
  }
}

int Daemon::Impl::PollTimeoutMs() {
  std::optional<absl::Time> next;
  for (PluginRunner* runner : Runners()) {
    std::optional<absl::Time> at = runner->retry_at();
    if (at.has_value() && (!next.has_value() || *at < *next)) next = at;
  }
  if (!next.has_value()) return -1;
  absl::Duration wait = std::max(*next - common::RealClock::Get().Now(),
                                 absl::ZeroDuration());
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
  for (PluginRunner* runner : Runners()) {
    runner->Reconcile(event.kubelet_socket_created);
  }
  bool replan = false;
  {
    absl::MutexLock lock(&mu_);
    replan = passthrough_replan_;
  }
  if (replan) ReplanPassthrough();
}

}  // namespace gpulet::daemon
