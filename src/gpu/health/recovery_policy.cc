#include "src/gpu/health/recovery_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gpulet::health {

const std::set<uint64_t>& ResetXids() {
  // NVIDIA's Xid catalog: the driver asks for a GPU reset (or more) after
  // these; docs/health.md says why for each.
  static const std::set<uint64_t>* const kXids =
      new std::set<uint64_t>{48, 63, 64, 74, 79, 92, 94, 95, 119, 120};
  return *kXids;
}

bool NeedsReset(uint64_t xid) { return xid == 0 || ResetXids().contains(xid); }

bool NeedsReset(const MonitorOptions& options, uint64_t xid) {
  auto it = options.xid_recovery.find(xid);
  if (xid != 0 && it != options.xid_recovery.end()) {
    return it->second == XidRecovery::kReset;
  }
  return NeedsReset(xid);
}

void RecoveryPolicy::OnFatal(int gpu, uint64_t xid, const std::string& reason,
                             absl::Time now) {
  OnFault(gpu, NeedsReset(xid), reason, now);
}

void RecoveryPolicy::OnFault(int gpu, bool needs_reset,
                             const std::string& reason, absl::Time now,
                             bool is_loss) {
  State& state = gpus_[gpu];
  state.quiet_since = now;
  state.reason = reason;
  if (needs_reset) {
    state.needs_reset = true;
    state.reset_seen = false;  // a reset before this fault does not count
  }
  if (is_loss) state.lost = true;
}

std::optional<std::string> RecoveryPolicy::OnProbe(int gpu, ProbeResult result,
                                                   absl::Time now) {
  auto it = gpus_.find(gpu);
  if (it == gpus_.end()) return std::nullopt;
  State& state = it->second;
  if (result != ProbeResult::kOk) {
    state.quiet_since = now;
    state.lost = result == ProbeResult::kLost;
    return std::nullopt;
  }
  if (state.lost) {
    // Lost, then answering again: the GPU was reset (or re-attached).
    state.lost = false;
    state.reset_seen = true;
    state.quiet_since = now;
  }
  if (state.needs_reset && !state.reset_seen) return std::nullopt;
  if (now - state.quiet_since < quiet_period_) return std::nullopt;
  std::string why = absl::StrCat(
      "recovered after ", state.reason, ": ",
      state.needs_reset ? "the GPU was reset (lost, then answering NVML "
                          "again) and "
                        : "NVML answers and ",
      "no fatal event for ", absl::FormatDuration(quiet_period_));
  gpus_.erase(it);
  return why;
}

bool RecoveryPolicy::NeedsResetToRecover(int gpu) const {
  auto it = gpus_.find(gpu);
  return it != gpus_.end() && it->second.needs_reset;
}

std::vector<int> RecoveryPolicy::Unhealthy() const {
  std::vector<int> gpus;
  gpus.reserve(gpus_.size());
  for (const auto& [gpu, state] : gpus_) gpus.push_back(gpu);
  std::sort(gpus.begin(), gpus.end());
  return gpus;
}

std::vector<RecoveryState> RecoveryPolicy::Export() const {
  std::vector<RecoveryState> out;
  for (const auto& [gpu, state] : gpus_) {
    out.push_back(RecoveryState{gpu, state.quiet_since, state.reason,
                                state.needs_reset, state.lost,
                                state.reset_seen});
  }
  std::sort(out.begin(), out.end(),
            [](const RecoveryState& a, const RecoveryState& b) {
              return a.gpu < b.gpu;
            });
  return out;
}

void RecoveryPolicy::Import(const RecoveryState& in) {
  State& state = gpus_[in.gpu];
  state.quiet_since = in.quiet_since;
  state.reason = in.reason;
  state.needs_reset = in.needs_reset;
  state.lost = in.lost;
  state.reset_seen = in.reset_seen;
}

}  // namespace gpulet::health
