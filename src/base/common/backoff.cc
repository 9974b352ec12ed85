#include "src/base/common/backoff.h"

#include <algorithm>

namespace gpulet::daemon {

absl::Duration Backoff::Next() {
  absl::Duration delay = policy_.initial;
  // Stop doubling once capped so long outages cannot overflow.
  for (int i = 0; i < failures_ && delay < policy_.max; ++i) delay *= 2;
  ++failures_;
  return std::min(delay, policy_.max);
}

}  // namespace gpulet::daemon
