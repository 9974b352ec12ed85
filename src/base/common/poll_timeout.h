// The timeout argument of poll(2) for a wait measured with absl: one
// rounding rule for every loop that polls until a deadline.
//
//   PollTimeoutMs(left)              -1 for an infinite wait, 0 once `left`
//                                    is not positive, otherwise `left`
//                                    rounded up to whole milliseconds (a
//                                    poll never ends a moment before the
//                                    deadline, to be called again with 0 ms
//                                    and spin) and capped at `cap`.
//   PollTimeoutUntil(deadline, clk)  the same for the time left until
//                                    `deadline` on `clk`
//                                    (absl::InfiniteFuture(): -1).
//
// A capped wait ends early by design: the caller's loop looks at the clock
// again. Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "absl/time/time.h"
#include "src/base/common/clock.h"

namespace gpulet::common {

inline int PollTimeoutMs(absl::Duration left,
                         absl::Duration cap = absl::Hours(1)) {
  if (left == absl::InfiniteDuration()) return -1;
  if (left <= absl::ZeroDuration()) return 0;
  if (left > cap) left = cap;
  return static_cast<int>(
      absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))));
}

inline int PollTimeoutUntil(absl::Time deadline, const Clock& clock,
                            absl::Duration cap = absl::Hours(1)) {
  if (deadline == absl::InfiniteFuture()) return -1;
  return PollTimeoutMs(deadline - clock.Now(), cap);
}

}  // namespace gpulet::common
