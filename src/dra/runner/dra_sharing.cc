#include "src/dra/runner/dra_sharing.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/common/logging.h"
#include "src/gpu/mps/compute_policy.h"
#include "src/gpu/mps/mps_paths.h"

namespace gpulet::daemon {
namespace {

// The claim's key under the MPS root; GPU UUIDs (the device plugin's
// daemons) never start with "claim-".
std::string MpsKey(const std::string& claim_uid) {
  return absl::StrCat("claim-", claim_uid);
}

// What the claim's mpsConfig asks of its daemon, as control commands:
// the limits of each device in the claim's order.
absl::StatusOr<std::vector<std::string>> DaemonCommands(
    const dra::ClaimSharing& sharing, const std::vector<std::string>& uuids) {
  std::vector<std::string> commands;
  if (sharing.active_thread_percentage.has_value()) {
    commands.push_back(sharing::MpsSetDefaultActiveThreadPercentage(
        *sharing.active_thread_percentage));
  }
  absl::StatusOr<std::map<std::string, int64_t>> limits =
      sharing.PinnedMemoryLimitsMiB(uuids);
  if (!limits.ok()) return limits.status();
  for (const std::string& uuid : uuids) {
    auto it = limits->find(uuid);
    if (it == limits->end()) continue;
    commands.push_back(sharing::MpsSetDefaultPinnedMemLimit(uuid, it->second));
  }
  return commands;
}

}  // namespace

DraSharing::DraSharing(DraSharingOptions options)
    : options_(std::move(options)) {}

DraSharing::~DraSharing() {
  absl::MutexLock lock(&mu_);
  for (auto& [uid, daemon] : daemons_) {
    absl::StatusOr<std::string> how = daemon->Stop(options_.stop_grace);
    GPULET_LOG(INFO) << "dra: MPS control daemon of claim " << uid
                     << " stopped: "
                     << (how.ok() ? *how : how.status().message());
  }
}

absl::StatusOr<dra::SharingEdits> DraSharing::Apply(
    const std::string& claim_uid, const dra::ClaimSharing& sharing,
    const std::vector<std::string>& uuids) {
  absl::MutexLock lock(&mu_);
  if (sharing.strategy == "TimeSlicing") {
    if (absl::Status s = ApplyTimeslice(claim_uid, sharing, uuids); !s.ok()) {
      return s;
    }
    return dra::SharingEdits{};
  }
  if (sharing.strategy == "MPS") return ApplyMps(claim_uid, sharing, uuids);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown sharing strategy \"", sharing.strategy, "\""));
}

absl::Status DraSharing::ApplyTimeslice(const std::string& claim_uid,
                                        const dra::ClaimSharing& sharing,
                                        const std::vector<std::string>& uuids) {
  const std::string interval =
      sharing.interval.empty() ? "Default" : sharing.interval;
  const std::optional<int> level = mps::TimesliceLevel(interval);
  if (!level.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("time-slicing interval \"", interval, "\" is unknown"));
  }
  for (const std::string& uuid : uuids) {
    if (!absl::StartsWith(uuid, "GPU-")) continue;  // a MIG device
    if (options_.nvidia_smi.empty()) {
      return absl::FailedPreconditionError(
          "time-slicing needs the driver's nvidia-smi, which was not found "
          "under the driver root");
    }
    if (absl::Status s = mps::SetTimeslice(options_.nvidia_smi, uuid, *level,
                                           options_.tool_timeout);
        !s.ok()) {
      return s;
    }
    timeslices_[uuid].insert(claim_uid);
  }
  return absl::OkStatus();
}

absl::StatusOr<dra::SharingEdits> DraSharing::ApplyMps(
    const std::string& claim_uid, const dra::ClaimSharing& sharing,
    const std::vector<std::string>& uuids) {
  if (options_.mps_root.empty()) {
    return absl::FailedPreconditionError(
        "MPS sharing needs gpulet dra --mps-root");
  }
  if (options_.mps_control.empty()) {
    return absl::FailedPreconditionError(
        "MPS sharing needs the driver's nvidia-cuda-mps-control, which was "
        "not found under the driver root");
  }
  const std::string key = MpsKey(claim_uid);
  absl::Status valid = claim_uid.empty()
                           ? absl::InvalidArgumentError("it is empty")
                           : sharing::CheckMpsKey(key);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("claim uid \"", absl::CHexEscape(claim_uid),
                     "\" cannot name an MPS directory: ", valid.message()));
  }
  absl::StatusOr<std::vector<std::string>> commands =
      DaemonCommands(sharing, uuids);
  if (!commands.ok()) return commands.status();
  auto it = daemons_.find(claim_uid);
  std::string how;
  if (it != daemons_.end() && it->second->Exited(&how)) {
    GPULET_LOG(WARNING) << "dra: MPS control daemon of claim " << claim_uid
                        << " had ended (" << how << "); starting it again";
    daemons_.erase(it);
    it = daemons_.end();
  }
  if (it == daemons_.end()) {
    if (absl::Status s = StartDaemon(claim_uid, *commands, uuids); !s.ok()) {
      return s;
    }
  }
  dra::SharingEdits edits;
  const std::string pipe = sharing::MpsContainerPipeDir(key);
  edits.env.push_back(absl::StrCat(sharing::kMpsPipeDirectoryEnv, "=", pipe));
  cdi::Mount pipe_mount;
  pipe_mount.host_path = sharing::MpsHostPipeDir(options_.mps_root, key);
  pipe_mount.container_path = pipe;
  pipe_mount.options = {"rbind", "rw"};
  cdi::Mount shm_mount;
  shm_mount.host_path = sharing::MpsHostShmDir(options_.mps_root, key);
  shm_mount.container_path = "/dev/shm";
  shm_mount.options = {"rbind", "rw"};
  edits.mounts = {pipe_mount, shm_mount};
  return edits;
}

absl::Status DraSharing::StartDaemon(const std::string& claim_uid,
                                     const std::vector<std::string>& commands,
                                     const std::vector<std::string>& uuids) {
  const std::string key = MpsKey(claim_uid);
  mps::DaemonSpec spec{
      .binary = options_.mps_control,
      .uuid = absl::StrJoin(uuids, ","),
      .pipe_dir = sharing::MpsHostPipeDir(options_.mps_root, key),
      .log_dir = sharing::MpsHostLogDir(options_.mps_root, key),
      .shm_dir = sharing::MpsHostShmDir(options_.mps_root, key)};
  absl::StatusOr<std::unique_ptr<mps::ControlProcess>> started =
      mps::ControlProcess::Start(spec);
  if (!started.ok()) return started.status();
  mps::ControlProcess& daemon = **started;
  absl::Status configured;
  if (!commands.empty()) {
    configured = daemon.AwaitReady(options_.tool_timeout);
    if (configured.ok()) {
      configured = daemon.Send(commands, options_.tool_timeout);
    }
  }
  if (!configured.ok()) {
    (void)daemon.Stop(options_.stop_grace);
    return configured;
  }
  GPULET_LOG(INFO) << "dra: MPS control daemon of claim " << claim_uid
                   << " started (pid " << daemon.pid() << ") for " << spec.uuid
                   << (commands.empty()
                           ? ""
                           : absl::StrCat(" with ",
                                          absl::StrJoin(commands, "; ")));
  daemons_[claim_uid] = *std::move(started);
  return absl::OkStatus();
}

absl::Status DraSharing::Release(const std::string& claim_uid) {
  absl::MutexLock lock(&mu_);
  absl::Status status;
  if (auto it = daemons_.find(claim_uid); it != daemons_.end()) {
    absl::StatusOr<std::string> how = it->second->Stop(options_.stop_grace);
    GPULET_LOG(INFO) << "dra: MPS control daemon of claim " << claim_uid
                     << " stopped: "
                     << (how.ok() ? *how : how.status().message());
    daemons_.erase(it);
    status.Update(how.status());
  }
  status.Update(RemoveMpsDir(claim_uid));
  for (auto it = timeslices_.begin(); it != timeslices_.end();) {
    if (it->second.erase(claim_uid) == 0 || !it->second.empty()) {
      ++it;
      continue;
    }
    // The last claim that set this GPU's time-slice.
    status.Update(mps::SetTimeslice(options_.nvidia_smi, it->first, 0,
                                    options_.tool_timeout));
    it = timeslices_.erase(it);
  }
  return status;
}

absl::Status DraSharing::RemoveMpsDir(const std::string& claim_uid) {
  const std::string key = MpsKey(claim_uid);
  if (options_.mps_root.empty() || claim_uid.empty() ||
      !sharing::CheckMpsKey(key).ok()) {
    return absl::OkStatus();  // Apply never made one
  }
  // remove_all does not follow the symlinks a client may leave in shm.
  const std::string dir = sharing::MpsHostDir(options_.mps_root, key);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("remove MPS directory ", dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

int DraSharing::DaemonPid(const std::string& claim_uid) const {
  absl::MutexLock lock(&mu_);
  auto it = daemons_.find(claim_uid);
  return it == daemons_.end() ? -1 : it->second->pid();
}

}  // namespace gpulet::daemon
