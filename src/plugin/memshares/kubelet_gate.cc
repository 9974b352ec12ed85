#include "src/plugin/memshares/kubelet_gate.h"

#include <algorithm>

namespace gpulet::nodeagent {

absl::Duration KubeletGate::BusyFor(absl::Time now) const {
  if (answering_ > 0) return std::max(grace_, absl::Milliseconds(10));
  absl::Time until = answered_at_ + grace_;
  if (chosen_at_ > answered_at_) {
    until = std::max(until, chosen_at_ + choice_timeout_);
  }
  return std::max(absl::ZeroDuration(), until - now);
}

}  // namespace gpulet::nodeagent
