#include "src/gpu/mps/supervisor.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/clock.h"
#include "src/base/common/errors.h"
#include "src/base/common/logging.h"
#include "src/base/common/poll_timeout.h"
#include "src/gpu/mps/compute_policy.h"
#include "src/gpu/mps/mps_paths.h"

namespace gpulet::mps {
namespace {

void Drain(int fd) {
  char buf[4096];
  while (::read(fd, buf, sizeof(buf)) > 0) {
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Supervisor>> Supervisor::Create(
    SupervisorOptions options) {
  common::UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return common::ErrnoToStatus(errno, "eventfd");
  common::UniqueFd inotify(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (!inotify.valid()) return common::ErrnoToStatus(errno, "inotify_init1");
  auto s = std::unique_ptr<Supervisor>(
      new Supervisor(std::move(options), std::move(wake), std::move(inotify)));
  if (s->options_.registry != nullptr) {
    absl::StatusOr<metrics::Family*> up = s->options_.registry->AddGauge(
        "gpulet_mps_daemon_up",
        "Whether the MPS control daemon of a GPU shared with MPS is up (1) "
        "or down (0).",
        {"gpu"});
    if (!up.ok()) return up.status();
    absl::StatusOr<metrics::Family*> restarts =
        s->options_.registry->AddCounter(
            "gpulet_mps_daemon_restarts_total",
            "Times the MPS control daemon of a GPU was started again after "
            "it went down.",
            {"gpu"});
    if (!restarts.ok()) return restarts.status();
    s->up_metric_ = *up;
    s->restarts_metric_ = *restarts;
  }
  s->thread_ = std::jthread([p = s.get()](std::stop_token st) { p->Loop(st); });
  return s;
}

Supervisor::Supervisor(SupervisorOptions options, common::UniqueFd wake,
                       common::UniqueFd inotify)
    : options_(std::move(options)),
      wake_(std::move(wake)),
      inotify_(std::move(inotify)) {}

Supervisor::~Supervisor() {
  thread_.request_stop();
  const uint64_t one = 1;
  (void)::write(wake_.get(), &one, sizeof(one));
  thread_.join();
}

void Supervisor::SetDaemons(std::map<std::string, DaemonSettings> daemons) {
  {
    absl::MutexLock lock(&mu_);
    wanted_ = std::move(daemons);
  }
  const uint64_t one = 1;
  (void)::write(wake_.get(), &one, sizeof(one));
}

void Supervisor::SetGpus(const std::vector<std::string>& uuids) {
  std::map<std::string, DaemonSettings> daemons;
  for (const std::string& uuid : uuids) daemons[uuid] = DaemonSettings{};
  SetDaemons(std::move(daemons));
}

bool Supervisor::Up(const std::string& uuid) const {
  absl::MutexLock lock(&mu_);
  return up_.contains(uuid);
}

void Supervisor::Loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    Sync();
    const absl::Time now = common::RealClock::Get().Now();
    StartDue(now);
    CheckReady(now);
    std::vector<pollfd> fds = {{wake_.get(), POLLIN, 0},
                               {inotify_.get(), POLLIN, 0}};
    std::vector<std::string> polled;
    for (const auto& [uuid, gpu] : gpus_) {
      if (gpu.process == nullptr) continue;
      fds.push_back({gpu.process->pidfd(), POLLIN, 0});
      polled.push_back(uuid);
    }
    const int rc = ::poll(fds.data(), fds.size(), PollTimeoutMs(now));
    if (rc < 0 && errno != EINTR) {
      GPULET_LOG(ERROR) << "MPS supervisor: poll: " << errno;
    }
    if (rc <= 0) continue;
    if (fds[0].revents != 0) Drain(wake_.get());
    if (fds[1].revents != 0) Drain(inotify_.get());
    for (size_t i = 0; i < polled.size(); ++i) {
      if (fds[i + 2].revents == 0) continue;
      Gpu& gpu = gpus_.at(polled[i]);
      std::string how;
      if (gpu.process != nullptr && gpu.process->Exited(&how)) {
        Down(polled[i], gpu,
             absl::StrCat("the control daemon exited (", how, ")"),
             common::RealClock::Get().Now());
      }
    }
  }
  for (auto& [uuid, gpu] : gpus_) {
    StopProcess(uuid, gpu, "");
    RestoreComputeMode(uuid, gpu);
  }
}

void Supervisor::StopProcess(const std::string& uuid, Gpu& gpu,
                             const std::string& why) {
  if (gpu.process == nullptr) return;
  absl::StatusOr<std::string> how = gpu.process->Stop(options_.stop_grace);
  gpu.process.reset();
  GPULET_LOG(INFO) << "MPS control daemon of " << uuid << " stopped"
                   << (why.empty() ? "" : absl::StrCat(" (", why, ")")) << ": "
                   << (how.ok() ? *how : std::string(how.status().message()));
}

void Supervisor::RestoreComputeMode(const std::string& uuid, Gpu& gpu) {
  if (!gpu.exclusive) return;
  gpu.exclusive = false;
  absl::Status s =
      SetComputeMode(options_.nvidia_smi, uuid, kComputeModeDefault);
  if (!s.ok()) GPULET_LOG(WARNING) << s.message();
}

void Supervisor::Sync() {
  std::map<std::string, DaemonSettings> wanted;
  {
    absl::MutexLock lock(&mu_);
    wanted = wanted_;
  }
  const absl::Time now = common::RealClock::Get().Now();
  for (auto it = gpus_.begin(); it != gpus_.end();) {
    Gpu& gpu = it->second;
    auto want = wanted.find(it->first);
    if (want != wanted.end() && want->second == gpu.settings) {
      ++it;
      continue;
    }
    if (want != wanted.end()) {
      // New limits reach only servers a daemon starts after it is told
      // them, so the daemon starts over with them.
      StopProcess(it->first, gpu, "its settings changed");
      if (!want->second.exclusive_process) RestoreComputeMode(it->first, gpu);
      gpu.settings = want->second;
      gpu.backoff.Reset();
      gpu.next_start = now;
      gpu.started_once = false;
      SetUp(it->first, gpu, false, "its settings changed; starting it again");
      ++it;
      continue;
    }
    StopProcess(it->first, gpu, "the GPU is no longer shared with MPS");
    RestoreComputeMode(it->first, gpu);
    if (gpu.watch >= 0) ::inotify_rm_watch(inotify_.get(), gpu.watch);
    SetUp(it->first, gpu, false, "the GPU is no longer shared with MPS");
    if (up_metric_ != nullptr) up_metric_->Remove({it->first});
    it = gpus_.erase(it);
  }
  for (const auto& [uuid, settings] : wanted) {
    auto [it, added] = gpus_.try_emplace(uuid);
    if (!added) continue;
    it->second.settings = settings;
    it->second.backoff = common::Backoff(
        {.initial = options_.initial_backoff, .max = options_.max_backoff});
    it->second.next_start = now;
    if (up_metric_ != nullptr) up_metric_->Set({uuid}, 0);
  }
}

void Supervisor::StartDue(absl::Time now) {
  for (auto& [uuid, gpu] : gpus_) {
    if (gpu.process == nullptr && gpu.next_start <= now) Start(uuid, gpu, now);
  }
}

void Supervisor::Start(const std::string& uuid, Gpu& gpu, absl::Time now) {
  if (absl::Status key = sharing::CheckMpsKey(uuid); !key.ok()) {
    Down(uuid, gpu, std::string(key.message()), now);
    return;
  }
  if (absl::Status mode = EnsureComputeMode(uuid, gpu); !mode.ok()) {
    Down(uuid, gpu, std::string(mode.message()), now);
    return;
  }
  DaemonSpec spec{options_.binary, uuid,
                  sharing::MpsHostPipeDir(options_.mps_root, uuid),
                  sharing::MpsHostLogDir(options_.mps_root, uuid),
                  sharing::MpsHostShmDir(options_.mps_root, uuid)};
  std::error_code ec;
  std::filesystem::create_directories(spec.pipe_dir, ec);
  if (gpu.watch < 0 && !ec) {
    gpu.watch = ::inotify_add_watch(inotify_.get(), spec.pipe_dir.c_str(),
                                    IN_CREATE | IN_MOVED_TO | IN_ATTRIB);
  }
  if (ec || gpu.watch < 0) {
    Down(uuid, gpu,
         absl::StrCat("cannot watch ", spec.pipe_dir, ": ",
                      ec ? ec.message() : std::to_string(errno)),
         now);
    return;
  }
  absl::StatusOr<std::unique_ptr<ControlProcess>> process =
      ControlProcess::Start(spec);
  if (!process.ok()) {
    Down(uuid, gpu, std::string(process.status().message()), now);
    return;
  }
  if (gpu.started_once && restarts_metric_ != nullptr) {
    restarts_metric_->Add({uuid});
  }
  gpu.started_once = true;
  gpu.process = *std::move(process);
  gpu.ready_by = now + options_.ready_timeout;
  GPULET_LOG(INFO) << "MPS control daemon of " << uuid << " started (pid "
                   << gpu.process->pid() << ", pipe directory " << spec.pipe_dir
                   << ")";
}

absl::Status Supervisor::EnsureComputeMode(const std::string& uuid, Gpu& gpu) {
  if (!gpu.settings.exclusive_process || gpu.exclusive) {
    return absl::OkStatus();
  }
  if (options_.nvidia_smi.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot set the compute mode of ", uuid,
        " to EXCLUSIVE_PROCESS: no nvidia-smi in the driver root"));
  }
  absl::Status s =
      SetComputeMode(options_.nvidia_smi, uuid, kComputeModeExclusiveProcess);
  if (s.ok()) gpu.exclusive = true;
  return s;
}

void Supervisor::CheckReady(absl::Time now) {
  for (auto& [uuid, gpu] : gpus_) {
    if (gpu.process == nullptr || gpu.up) continue;
    if (gpu.process->Ready()) {
      if (!gpu.settings.commands.empty()) {
        absl::Status sent =
            gpu.process->Send(gpu.settings.commands, options_.ready_timeout);
        if (!sent.ok()) {
          Down(uuid, gpu, std::string(sent.message()), now);
          continue;
        }
      }
      gpu.backoff.Reset();
      SetUp(uuid, gpu, true,
            gpu.settings.commands.empty()
                ? "its control socket is ready"
                : "its control socket is ready and its limits are set");
    } else if (now >= gpu.ready_by) {
      Down(uuid, gpu,
           absl::StrCat("no control socket after ",
                        absl::FormatDuration(options_.ready_timeout)),
           now);
    }
  }
}

void Supervisor::Down(const std::string& uuid, Gpu& gpu,
                      const std::string& reason, absl::Time now) {
  gpu.process.reset();  // kills what is left
  const absl::Duration delay = gpu.backoff.Next();
  gpu.next_start = now + delay;
  const std::string why = absl::StrCat(reason, "; starting it again in ",
                                       absl::FormatDuration(delay));
  GPULET_LOG(WARNING) << "MPS control daemon of " << uuid
                      << " is down: " << why;
  SetUp(uuid, gpu, false, why);
}

void Supervisor::SetUp(const std::string& uuid, Gpu& gpu, bool up,
                       const std::string& reason) {
  const bool changed = gpu.up != up;
  gpu.up = up;
  {
    absl::MutexLock lock(&mu_);
    if (up) {
      up_.insert(uuid);
    } else {
      up_.erase(uuid);
    }
  }
  if (up_metric_ != nullptr) up_metric_->Set({uuid}, up ? 1 : 0);
  if (up) GPULET_LOG(INFO) << "MPS control daemon of " << uuid << " is up";
  if (changed && options_.on_change) options_.on_change(uuid, up, reason);
}

int Supervisor::PollTimeoutMs(absl::Time now) const {
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [uuid, gpu] : gpus_) {
    next = std::min(next, gpu.process == nullptr ? gpu.next_start
                          : gpu.up               ? absl::InfiniteFuture()
                                                 : gpu.ready_by);
  }
  return next == absl::InfiniteFuture() ? -1
                                        : common::PollTimeoutMs(next - now);
}

}  // namespace gpulet::mps
