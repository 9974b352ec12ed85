#include "src/plugin/daemon/daemon.h"

#include <malloc.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "src/base/common/clock.h"
#include "src/base/common/errors.h"
#include "src/base/common/logging.h"
#include "src/base/common/poll_timeout.h"
#include "src/gpu/device/discovery.h"
#include "src/gpu/device/nvml_error_kind.h"
#include "src/gpu/nvml/dynamic_library.h"
#include "src/plugin/daemon/daemon_impl.h"

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
      api_(options_.kubeconfig, metrics_.registry()),
      wake_(DirName(options_.kubelet_socket),
            BaseName(options_.kubelet_socket)),
      memory_(options_.node_name, options_.pod_resources_socket,
              metrics_.registry(), api_),
      served_(metrics_.gpulet(),
              [this](const pluginapi::DeviceSnapshot* units) {
                memory_.PublishUnits(units);
              }),
      monitor_(metrics_.gpulet(), served_),
      mps_(metrics_.registry(), served_),
      passthrough_(options_.socket_prefix, metrics_.gpulet(), served_,
                   [this] { wake_.Wake(); }) {}

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
  if (absl::Status s = wake_.Open(); !s.ok()) {
    GPULET_LOG(ERROR) << s.message();
    return 1;
  }
  // gRPC's server threads each keep a malloc arena of freed request
  // buffers; two arenas keep a burst of large requests from growing the
  // resident set by megabytes.
  ::mallopt(M_ARENA_MAX, 2);
  if (absl::Status s = metrics_.Start(config_.metrics); !s.ok()) {
    GPULET_LOG(ERROR) << s.message();
    return 1;
  }
  if (!CreateLabelPublisher()) return 1;
  if (!StartNodeConfig()) return 1;
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

bool Daemon::Impl::CreateLabelPublisher() {
  if (!options_.labels.enabled()) return true;
  // The process's one client when labels need one; when it cannot be made,
  // the publisher says what that means (an error, or the file under auto).
  kube::Client* api = nullptr;
  const bool node_feature =
      options_.labels.node_feature_api != NodeFeatureApi::kOff &&
      !options_.labels.feature_node.empty();
  if (!options_.labels.node_name.empty() || node_feature) {
    absl::StatusOr<kube::Client*> client = api_.Get();
    if (client.ok()) api = *client;
  }
  absl::StatusOr<std::unique_ptr<LabelPublisher>> labels =
      LabelPublisher::Create(options_.labels, api);
  if (!labels.ok()) {
    GPULET_LOG(ERROR) << labels.status().message();
    return false;
  }
  labels_ = *std::move(labels);
  return true;
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

RunnerOptions Daemon::Impl::MakeRunnerOptions() {
  RunnerOptions options{DirName(options_.kubelet_socket),
                        options_.kubelet_socket,
                        options_.register_timeout,
                        options_.backoff,
                        metrics_.gpulet(),
                        [this] { return StopRequested(); }};
  options.wake = [this] { wake_.Wake(); };
  return options;
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
    pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {wake_.fd(), POLLIN, 0}};
    const int timeout = stashed_signal_ != 0 ? 0 : PollTimeoutMs();
    if (::poll(fds, 2, timeout) < 0 && errno != EINTR) {
      GPULET_LOG(ERROR) << common::ErrnoToStatus(errno, "poll").message();
      return SessionEnd{End::kExit, 1};
    }
    if (int signo = TakeSignal(); signo != 0) {
      if (signo == SIGHUP) {
        GPULET_LOG(INFO) << "received SIGHUP; reloading the configuration";
        if (node_config_ != nullptr) {
          FollowNodeConfig(/*force=*/true);
        } else {
          Reload();
        }
        continue;
      }
      GPULET_LOG(INFO) << "received " << SignalName(signo) << "; shutting down";
      return SessionEnd{End::kExit, 0};
    }
    if (fds[1].revents & POLLIN) HandleWake();
    if (node_config_changed_.exchange(false)) FollowNodeConfig(false);
    absl::Time now = common::RealClock::Get().Now();
    for (PluginRunner* runner : served_.Runners()) runner->RetryIfDue(now);
  }
}

void Daemon::Impl::StopSession() {
  // Streams end first, so the kubelet hears of the stop at once; the
  // runners themselves stay until no callback can reach them.
  for (PluginRunner* runner : served_.Runners()) runner->Stop();
  passthrough_.Stop();
  wake_.StopWatching();
  monitor_.Stop();
  mps_.Stop();  // each MPS control daemon is told to quit
  served_.Clear();
  memory_.Reset();
  node_ = device::Node{};
  wake_.Clear();
  ShutdownNvml();
  GPULET_LOG(INFO) << "stopped serving; sockets removed";
}

void Daemon::Impl::ShutdownNvml() {
  topology_.Join();
  if (!nvml_initialized_) return;
  nvml_initialized_ = false;
  if (absl::Status s = lib_->Shutdown(); !s.ok()) {
    GPULET_LOG(WARNING) << s.message();
  }
}

int Daemon::Impl::PollTimeoutMs() {
  std::optional<absl::Time> next;
  for (PluginRunner* runner : served_.Runners()) {
    std::optional<absl::Time> at = runner->retry_at();
    if (at.has_value() && (!next.has_value() || *at < *next)) next = at;
  }
  if (!next.has_value()) return -1;
  return common::PollTimeoutUntil(*next, common::RealClock::Get());
}

void Daemon::Impl::HandleWake() {
  const registration::SocketEvent event = wake_.Take();
  for (const std::string& name : event.deleted) {
    GPULET_VLOG(1) << "socket watcher: " << name << " deleted";
  }
  if (event.kubelet_socket_created) {
    GPULET_VLOG(1) << "socket watcher: " << BaseName(options_.kubelet_socket)
                   << " created";
    metrics_.gpulet()->kubelet_restarts->Add({});
  }
  for (PluginRunner* runner : served_.Runners()) {
    runner->Reconcile(event.kubelet_socket_created);
  }
  ReplanPassthrough();
}

}  // namespace gpulet::daemon
