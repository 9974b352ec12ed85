// Recovery policy: when a GPU marked unhealthy may be marked healthy again.
//
// A GPU becomes unhealthy through a fatal event (xid_policy.h). From then on
// the monitor probes it (NVML calls on its handle) and feeds each result in;
// the policy answers whether the GPU has recovered:
//
//   - After a fault that does not need a GPU reset, the GPU recovers at the
//     first successful probe once a quiet period (default 5 minutes) has
//     passed since its last fatal event or failed probe.
//   - After a fault that needs a GPU reset (NeedsReset(): Xid 79, 48, 74,
//     ...; a double-bit ECC event), the GPU must first be seen gone (a probe
//     answered "lost", e.g. NVML_ERROR_GPU_IS_LOST) and then answer again;
//     the quiet period restarts when it answers again.
//   - Any new fatal event restarts the quiet period; a new reset-needing one
//     also requires a new lost-then-back cycle.
//
// Pure: values in, values out; time is passed in explicitly. Thread safety:
// a RecoveryPolicy is not thread-safe (the monitor's thread owns it).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "src/gpu/health/xid_policy.h"

namespace gpulet::health {

// Xids after which the GPU is not trusted until it has been reset
// (docs/health.md has the table and the reasons).
const std::set<uint64_t>& ResetXids();

// True when a fatal event with this Xid (0: a double-bit ECC event) needs a
// GPU reset before the GPU may recover.
bool NeedsReset(uint64_t xid);

// As above, with the config file's per-Xid recovery (options.xid_recovery)
// taking precedence for the Xids it lists.
bool NeedsReset(const MonitorOptions& options, uint64_t xid);

enum class ProbeResult {
  kOk,      // every probe call succeeded
  kLost,    // the GPU is gone (NVML_ERROR_GPU_IS_LOST and the like)
  kFailed,  // some other error
};

// One unhealthy GPU's recovery state, to carry it from one policy (and
// monitor) to the next across a configuration reload.
struct RecoveryState {
  int gpu = -1;
  absl::Time quiet_since;  // last fatal event or failed probe
  std::string reason;      // of the last fatal event
  bool needs_reset = false;
  bool lost = false;        // the last probe said "lost"
  bool reset_seen = false;  // lost, then answered again
  bool operator==(const RecoveryState&) const = default;
};

class RecoveryPolicy {
 public:
  explicit RecoveryPolicy(absl::Duration quiet_period)
      : quiet_period_(quiet_period) {}

  // A fatal event for GPU `gpu` at `now`; `reason` is the HealthEvent's.
  // Same as OnFault(gpu, NeedsReset(xid), reason, now).
  void OnFatal(int gpu, uint64_t xid, const std::string& reason,
               absl::Time now);
  // A fatal event that does (or does not) need a GPU reset before recovery.
  // `is_loss`: the fault is the GPU's loss itself (Xid 79, or a probe that
  // found the GPU lost), so it also counts as the reset's first half: the
  // GPU recovers once it answers again and the quiet period has passed,
  // even if no probe ever sees it lost (it came back first).
  void OnFault(int gpu, bool needs_reset, const std::string& reason,
               absl::Time now, bool is_loss = false);

  // A probe of GPU `gpu` at `now`. Returns the recovery reason ("recovered
  // after Xid 32 (...): ...") when the GPU is healthy again; it is then
  // forgotten. nullopt when the GPU stays unhealthy or is not tracked.
  std::optional<std::string> OnProbe(int gpu, ProbeResult result,
                                     absl::Time now);

  // The GPUs currently unhealthy, ascending: the ones to probe.
  std::vector<int> Unhealthy() const;
  // True when `gpu` is unhealthy with a fault that needs a reset: its
  // recovery, if the next probe brings one, is a recovery after a reset.
  bool NeedsResetToRecover(int gpu) const;

  // Every unhealthy GPU's state, ascending by GPU; Import() of each into a
  // new policy makes it answer exactly as this one would.
  std::vector<RecoveryState> Export() const;
  void Import(const RecoveryState& state);

 private:
  struct State {
    absl::Time quiet_since;  // last fatal event or failed probe
    std::string reason;      // of the last fatal event
    bool needs_reset = false;
    bool lost = false;        // the last probe said "lost"
    bool reset_seen = false;  // lost, then answered again
  };

  const absl::Duration quiet_period_;
  absl::flat_hash_map<int, State> gpus_;
};

}  // namespace gpulet::health
