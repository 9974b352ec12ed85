#include "src/plugin/daemon/plugin_runner.h"

#include <sys/stat.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "src/base/common/clock.h"
#include "src/base/common/logging.h"
#include "src/model/allocation/allocate_response.h"
#include "src/model/allocation/simple_preferred.h"
#include "src/net/registration/registrar.h"

namespace gpulet::daemon {
namespace {

plugin::PluginOptions ServerOptions(
    const resources::ResourceSpec& spec, const RunnerOptions& runner,
    std::function<void(uint64_t run)> on_unwatched) {
  const metrics::GpuletMetrics* m = runner.metrics;
  plugin::PluginOptions options;
  options.handlers_wait = runner.handlers_wait;
  options.on_unwatched = std::move(on_unwatched);
  if (m != nullptr) {
    options.on_allocated = [m, resource = spec.resource_name](size_t n) {
      m->allocations->Add({resource});
      m->allocated_devices->Add({resource}, static_cast<double>(n));
    };
  }
  options.resource_name = spec.resource_name;
  options.socket_name = spec.socket_name;
  options.get_preferred_allocation_available = true;
  options.pre_start_required = false;
  return options;
}

}  // namespace

std::optional<FileIdentity> IdentifyFile(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{st.st_dev, st.st_ino, st.st_ctim.tv_sec,
                      st.st_ctim.tv_nsec};
}

PluginRunner::PluginRunner(resources::ResourceSpec spec, RunnerOptions options,
                           pluginapi::AllocateHandler allocate,
                           pluginapi::PreferredHandler preferred)
    : spec_(std::move(spec)),
      options_(std::move(options)),
      // The list owns the devices; spec_ keeps only the names.
      devices_(std::move(spec_.devices)),
      handlers_(std::make_shared<const Handlers>(Handlers{
          allocate ? std::move(allocate)
                   : pluginapi::AllocateHandler(allocation::EnvvarResponse),
          preferred
              ? std::move(preferred)
              : pluginapi::PreferredHandler(allocation::SimplePreferred)})),
      server_(std::make_unique<plugin::PluginServer>(
          ServerOptions(spec_, options_,
                        [this](uint64_t run) { Unwatched(run); }),
          devices_,
          [this](const pluginapi::DeviceSnapshot& snapshot,
                 const std::vector<std::string>& ids) {
            return handlers()->allocate(snapshot, ids);
          },
          [this](const pluginapi::DeviceSnapshot& snapshot,
                 const std::vector<std::string>& available,
                 const std::vector<std::string>& must_include, int size) {
            return handlers()->preferred(snapshot, available, must_include,
                                         size);
          })),
      backoff_(options_.backoff) {
  if (options_.metrics != nullptr) {
    // Exported at 0 from the start, as Prometheus users expect.
    const metrics::GpuletMetrics& m = *options_.metrics;
    m.plugin_restarts->Add({spec_.resource_name}, 0);
    m.allocations->Add({spec_.resource_name}, 0);
    m.allocated_devices->Add({spec_.resource_name}, 0);
    m.registrations->Add({spec_.resource_name, metrics::kResultOk}, 0);
    m.registrations->Add({spec_.resource_name, metrics::kResultError}, 0);
  }
}

std::shared_ptr<const PluginRunner::Handlers> PluginRunner::handlers() const {
  absl::MutexLock lock(&handlers_mu_);
  return handlers_;
}

void PluginRunner::Update(std::vector<pluginapi::Device> devices,
                          pluginapi::AllocateHandler allocate,
                          pluginapi::PreferredHandler preferred) {
  auto fresh = std::make_shared<const Handlers>(Handlers{
      allocate ? std::move(allocate)
               : pluginapi::AllocateHandler(allocation::EnvvarResponse),
      preferred ? std::move(preferred)
                : pluginapi::PreferredHandler(allocation::SimplePreferred)});
  {
    absl::MutexLock lock(&handlers_mu_);
    handlers_ = std::move(fresh);
  }
  devices_.Replace(std::move(devices));
}

PluginRunner::~PluginRunner() { Stop(); }

void PluginRunner::Start() {
  GPULET_LOG(INFO) << "starting " << spec_.resource_name << " ("
                   << devices_.Snapshot()->devices.size() << " devices) on "
                   << options_.plugin_dir << "/" << spec_.socket_name;
  backoff_.Reset();
  Attempt(/*restart_server=*/true);
}

void PluginRunner::Restart(const std::string& reason) {
  GPULET_LOG(INFO) << "restarting " << spec_.resource_name << ": " << reason;
  if (options_.metrics != nullptr) {
    options_.metrics->plugin_restarts->Add({spec_.resource_name});
  }
  backoff_.Reset();
  Attempt(/*restart_server=*/true);
}

void PluginRunner::Reconcile(bool kubelet_socket_created) {
  if (!registered_) {
    if (kubelet_socket_created && retry_at_.has_value()) {
      GPULET_LOG(INFO) << options_.kubelet_socket << " created; retrying "
                       << spec_.resource_name << " now";
      backoff_.Reset();
      Attempt(/*restart_server=*/!ServerReusable());
    }
    return;
  }
  // A kubelet restart also deletes our socket; name the cause, not the
  // symptom.
  if (kubelet_socket_created &&
      IdentifyFile(options_.kubelet_socket) != kubelet_id_) {
    Restart(absl::StrCat("kubelet restarted (", options_.kubelet_socket,
                         " was recreated)"));
  } else if (IdentifyFile(server_->socket_path()) != socket_id_) {
    Restart(absl::StrCat("socket ", server_->socket_path(),
                         " was deleted or replaced"));
  }
  // After a restart the run has moved on and an old run's news is stale.
  const uint64_t unwatched = unwatched_run_.exchange(0);
  if (registered_ && unwatched != 0 && unwatched == server_->run() &&
      server_->running() && !unwatched_check_at_.has_value()) {
    unwatched_check_at_ = common::RealClock::Get().Now() + kUnwatchedGrace;
  }
}

// The kubelet opens its stream right after a registration: a stream of
// another client that ended before it opened must not count. So the check
// comes a grace period later, and only no open stream at all means the
// kubelet dropped us.
void PluginRunner::CheckWatched() {
  unwatched_check_at_.reset();
  if (!registered_ || !server_->running()) return;
  if (server_->open_streams() > 0) {
    GPULET_VLOG(1) << spec_.resource_name
                   << ": a stream is open again; the kubelet watches it";
    return;
  }
  GPULET_LOG(WARNING) << "the kubelet stopped watching " << spec_.resource_name
                      << " (no open ListAndWatch call for "
                      << absl::FormatDuration(kUnwatchedGrace)
                      << " after the last one ended); registering again";
  backoff_.Reset();
  Attempt(/*restart_server=*/false);
}

void PluginRunner::Unwatched(uint64_t run) {
  unwatched_run_.store(run);
  if (options_.wake) options_.wake();
}

void PluginRunner::RetryIfDue(absl::Time now) {
  if (unwatched_check_at_.has_value() && *unwatched_check_at_ <= now) {
    CheckWatched();
  }
  if (!retry_at_.has_value() || *retry_at_ > now) return;
  Attempt(/*restart_server=*/!ServerReusable());
}

// While the kubelet is unreachable the server need not restart: no kubelet
// can hold a stream to it. After any other failure the kubelet may have
// seen the request, so the old server goes first.
bool PluginRunner::ServerReusable() const {
  return last_failure_ == absl::StatusCode::kUnavailable &&
         server_->running() &&
         IdentifyFile(server_->socket_path()) == socket_id_;
}

void PluginRunner::Stop() {
  server_->Stop();
  registered_ = false;
  unwatched_check_at_.reset();
  retry_at_.reset();
  socket_id_.reset();
  kubelet_id_.reset();
}

void PluginRunner::Attempt(bool restart_server) {
  registered_ = false;
  retry_at_.reset();
  // This registration supersedes a pending check on the last one.
  unwatched_check_at_.reset();
  if (restart_server) {
    server_->Stop();
    if (absl::Status s = server_->Start(options_.plugin_dir); !s.ok()) {
      Fail(s);
      return;
    }
    socket_id_ = IdentifyFile(server_->socket_path());
  }
  registration::RegisterParams params;
  params.kubelet_socket = options_.kubelet_socket;
  params.endpoint = spec_.socket_name;
  params.resource_name = spec_.resource_name;
  params.get_preferred_allocation_available =
      server_->options().get_preferred_allocation_available;
  params.pre_start_required = server_->options().pre_start_required;
  absl::Status registered = registration::Register(
      params, options_.register_timeout, options_.cancel_registration);
  if (options_.metrics != nullptr) {
    options_.metrics->registrations->Add(
        {spec_.resource_name,
         registered.ok() ? metrics::kResultOk : metrics::kResultError});
  }
  if (!registered.ok()) {
    Fail(registered);
    return;
  }
  kubelet_id_ = IdentifyFile(options_.kubelet_socket);
  registered_ = true;
  GPULET_LOG(INFO) << "registered " << spec_.resource_name << " ("
                   << devices_.Snapshot()->devices.size()
                   << " devices, endpoint " << spec_.socket_name << ") with "
                   << options_.kubelet_socket
                   << (backoff_.failures() > 0
                           ? absl::StrCat(" after ", backoff_.failures(),
                                          " failed attempts")
                           : std::string());
  backoff_.Reset();
  last_error_.clear();
  last_failure_ = absl::StatusCode::kOk;
}

// The first failure, and any with a new message, is a warning; repeats of
// the same failure while the kubelet is away are kept out of the log.
void PluginRunner::Fail(const absl::Status& status) {
  last_failure_ = status.code();
  absl::Duration delay = backoff_.Next();
  retry_at_ = common::RealClock::Get().Now() + delay;
  std::string message(status.message());
  if (message != last_error_) {
    GPULET_LOG(WARNING) << message << "; retrying in "
                        << absl::FormatDuration(delay) << " (backing off to "
                        << absl::FormatDuration(options_.backoff.max) << ")";
    last_error_ = std::move(message);
  } else {
    GPULET_VLOG(1) << message << "; retry in " << absl::FormatDuration(delay);
  }
}

}  // namespace gpulet::daemon
