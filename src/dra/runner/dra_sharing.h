// DraSharing: `gpulet dra`'s SharingApplier
// (src/dra/kubelet/sharing_applier.h): what a claim's sharing configuration
// does on the node.
//
// - TimeSlicing: each whole GPU of the claim gets the claim's time-slice
//   (`nvidia-smi compute-policy --set-timeslice`, mps/compute_policy.h;
//   "Default" when the claim names no interval). MIG devices are left
//   alone: the driver keeps no time-slice per MIG device. When the last
//   claim that set a GPU's time-slice is released, the GPU is set back to
//   DEFAULT.
// - MPS: one MPS control daemon per claim (mps::ControlProcess) serving
//   the claim's devices (CUDA_VISIBLE_DEVICES = their UUIDs). When the
//   claim's mpsConfig sets defaults (active-thread percentage, pinned
//   device memory limits), Apply waits for the daemon's control socket and
//   sends them as control commands, as NVIDIA's driver does, before any
//   client can start a server; a daemon that cannot take them is stopped
//   and the claim fails. Its
//   pipe, log and shm directories are at <mps_root>/claim-<uid>/ (the uid
//   checked to be one path component) and the shm directory over its
//   /dev/shm; the claim's devices get
//   CUDA_MPS_PIPE_DIRECTORY=/mps/claim-<uid>/pipe, that directory mounted,
//   and the claim's shm directory as /dev/shm, so no other claim's
//   containers share it. Release tells the daemon to quit (killing it
//   after stop_grace) and removes <mps_root>/claim-<uid>/. The directory
//   outlives a gpulet restart: Apply for a checkpointed claim starts the
//   daemon again over what is there.
//
// A daemon that dies is not started again until the claim is prepared
// again or gpulet restarts (ClaimPreparer::Create applies every
// checkpointed claim again); the daemons die with gpulet (PDEATHSIG).
//
// Thread safety: all methods may be called from any thread (one mutex).
// A daemon is killed if the thread that started it ends, so call Apply
// from a thread that lives as long as the claims (the DRA server's).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/dra/kubelet/sharing_applier.h"
#include "src/gpu/mps/control_process.h"

namespace gpulet::daemon {

struct DraSharingOptions {
  // Host paths of the driver's tools; empty: not found, and claims with
  // that strategy fail naming the tool.
  std::string nvidia_smi;
  std::string mps_control;
  // Where the claims' MPS directories go; empty: MPS claims fail naming
  // --mps-root.
  std::string mps_root;
  absl::Duration tool_timeout = absl::Seconds(30);
  absl::Duration stop_grace = absl::Seconds(10);
};

class DraSharing : public dra::SharingApplier {
 public:
  explicit DraSharing(DraSharingOptions options);
  ~DraSharing() override;

  absl::StatusOr<dra::SharingEdits> Apply(
      const std::string& claim_uid, const dra::ClaimSharing& sharing,
      const std::vector<std::string>& uuids) override;
  absl::Status Release(const std::string& claim_uid) override;

  // The pid of the claim's MPS control daemon; -1 when it has none.
  int DaemonPid(const std::string& claim_uid) const;

 private:
  absl::Status ApplyTimeslice(const std::string& claim_uid,
                              const dra::ClaimSharing& sharing,
                              const std::vector<std::string>& uuids)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<dra::SharingEdits> ApplyMps(
      const std::string& claim_uid, const dra::ClaimSharing& sharing,
      const std::vector<std::string>& uuids) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status StartDaemon(const std::string& claim_uid,
                           const std::vector<std::string>& commands,
                           const std::vector<std::string>& uuids)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RemoveMpsDir(const std::string& claim_uid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DraSharingOptions options_;
  mutable absl::Mutex mu_;
  // GPU UUID -> the claims that set its time-slice.
  std::map<std::string, std::set<std::string>> timeslices_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<mps::ControlProcess>> daemons_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::daemon
