// Supervisor: one MPS control daemon per GPU that gpulet shares with MPS
// (docs/sharing.md "MPS"): the GPUs of memory shares with MPS, and the GPUs
// sharing.mps replicates. Kept running on a thread of its own.
//
// For each GPU of SetDaemons() it starts a ControlProcess with the GPU's
// directories under the MPS root (mps_paths.h), its /dev/shm the GPU's own
// <mps_root>/<uuid>/shm. With `exclusive_process` the GPU's compute mode
// is set to EXCLUSIVE_PROCESS first (nvidia-smi, compute_policy.h) and
// back to DEFAULT when the GPU no longer has a daemon. Once the daemon's
// control socket appears in its pipe directory (inotify, no polling) the
// GPU's `commands` are sent to it (sharing.mps's default limits), and the
// GPU is reported up. A daemon that exits, fails to start, has no control
// socket after `ready_timeout` or refuses its commands is reported down
// and started again after a backoff (initial_backoff, doubling up to
// max_backoff; back to initial once a daemon came up). A GPU whose
// settings change has its daemon told to `quit` and started again at
// once; a GPU dropped by SetDaemons has its daemon told to `quit` and is
// reported down; when the supervisor is destroyed every daemon is told to
// `quit`, with no report.
//
// `on_change` is called on the supervisor's thread whenever a GPU goes up
// or down, with the reason; it must not call back into the supervisor.
// Metrics: gpulet_mps_daemon_up{gpu} (1/0) and
// gpulet_mps_daemon_restarts_total{gpu}.
//
// Thread safety: SetDaemons, SetGpus and Up may be called from any thread.
// The destructor stops the daemons and joins the thread; REQUIRES: not
// called from on_change.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/base/common/backoff.h"
#include "src/base/common/unique_fd.h"
#include "src/base/metrics/registry.h"
#include "src/gpu/mps/control_process.h"

namespace gpulet::mps {

// What one GPU's daemon is set up with.
struct DaemonSettings {
  // Control commands sent once the daemon is listening, before the GPU is
  // reported up ("set_default_active_thread_percentage 50").
  std::vector<std::string> commands;
  // EXCLUSIVE_PROCESS compute mode while the GPU has a daemon.
  bool exclusive_process = false;

  bool operator==(const DaemonSettings&) const = default;
};

struct SupervisorOptions {
  std::string binary;    // host path of nvidia-cuda-mps-control
  std::string mps_root;  // flags.mpsRoot
  // Host path of nvidia-smi, for DaemonSettings::exclusive_process; empty:
  // a GPU that needs it is reported down, naming the missing program.
  std::string nvidia_smi = "";
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(30);
  absl::Duration ready_timeout = absl::Seconds(30);
  absl::Duration stop_grace = absl::Seconds(10);
  std::function<void(const std::string& uuid, bool up,
                     const std::string& reason)>
      on_change;
  // May be null: no metrics.
  metrics::Registry* registry = nullptr;
};

class Supervisor {
 public:
  static absl::StatusOr<std::unique_ptr<Supervisor>> Create(
      SupervisorOptions options);
  ~Supervisor();

  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // The GPUs (UUIDs) that need a daemon, with its settings; starts the new
  // ones, restarts the ones whose settings changed and stops the ones no
  // longer listed.
  void SetDaemons(std::map<std::string, DaemonSettings> daemons);
  // SetDaemons with default settings for each GPU.
  void SetGpus(const std::vector<std::string>& uuids);
  // Whether the GPU's daemon is up (its control socket is there).
  bool Up(const std::string& uuid) const;

 private:
  struct Gpu {
    DaemonSettings settings;
    bool exclusive = false;  // compute mode set to EXCLUSIVE_PROCESS
    std::unique_ptr<ControlProcess> process;
    bool up = false;
    common::Backoff backoff;  // failures since it was last up
    absl::Time next_start;    // when down
    absl::Time ready_by;      // when starting
    bool started_once = false;
    int watch = -1;  // inotify watch of the pipe directory
  };

  Supervisor(SupervisorOptions options, common::UniqueFd wake,
             common::UniqueFd inotify);
  void Loop(std::stop_token stop);
  void Sync();  // the wanted set into gpus_
  // Tells the GPU's daemon to quit (when one runs); `why` for the log.
  void StopProcess(const std::string& uuid, Gpu& gpu, const std::string& why);
  // EXCLUSIVE_PROCESS when the settings ask for it and it is not set yet.
  absl::Status EnsureComputeMode(const std::string& uuid, Gpu& gpu);
  // Back to DEFAULT when gpulet set EXCLUSIVE_PROCESS.
  void RestoreComputeMode(const std::string& uuid, Gpu& gpu);
  void StartDue(absl::Time now);
  void Start(const std::string& uuid, Gpu& gpu, absl::Time now);
  void CheckReady(absl::Time now);
  void Down(const std::string& uuid, Gpu& gpu, const std::string& reason,
            absl::Time now);
  void SetUp(const std::string& uuid, Gpu& gpu, bool up,
             const std::string& reason);
  int PollTimeoutMs(absl::Time now) const;

  const SupervisorOptions options_;
  metrics::Family* up_metric_ = nullptr;
  metrics::Family* restarts_metric_ = nullptr;
  common::UniqueFd wake_;
  common::UniqueFd inotify_;
  mutable absl::Mutex mu_;
  std::map<std::string, DaemonSettings> wanted_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> up_ ABSL_GUARDED_BY(mu_);
  // The supervisor thread's own.
  std::map<std::string, Gpu> gpus_;
  std::jthread thread_;  // last: joined before the members above go
};

}  // namespace gpulet::mps
