// The API client's waits used to go through a Sleeper of their own; they go
// through common::Clock::Sleep now (src/base/common/clock.h). These names
// remain only for the node plugin's code (src/plugin/daemon), which still
// spells them, and go once it passes the clock alone.
//
// Thread safety: as common::Clock.
#pragma once

#include <stop_token>
#include <vector>

#include "absl/time/time.h"
#include "src/base/common/clock.h"

namespace gpulet::kube {

using Sleeper = common::Clock;
using RealSleeper = common::RealClock;

// The FakeClock it wraps, under the old name: sleeping advances that clock.
class FakeSleeper final : public common::Clock {
 public:
  explicit FakeSleeper(common::FakeClock& clock) : clock_(clock) {}
  absl::Time Now() const override { return clock_.Now(); }
  absl::Time WallNow() const override { return clock_.WallNow(); }
  bool Sleep(absl::Duration duration,
             std::stop_token stop = {}) const override {
    return clock_.Sleep(duration, stop);
  }
  std::vector<absl::Duration> sleeps() const { return clock_.sleeps(); }

 private:
  common::FakeClock& clock_;
};

}  // namespace gpulet::kube
