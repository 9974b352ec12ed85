// Clock: the seam through which time-dependent policies read the time, so
// tests can drive them with explicit instants instead of sleeping.
//
// RealClock reads the monotonic clock (CLOCK_MONOTONIC, as an absl::Time
// that many seconds after the Unix epoch): deadlines and quiet periods are
// measured with it, so a step of the wall clock (NTP at boot, an operator
// setting the date) neither stalls nor hastens them. Its instants are for
// measuring intervals only, never for display. FakeClock holds a time that
// only moves when a test calls Advance() or Set(). Clocks are borrowed by
// their users, never owned; RealClock::Get() is a process-wide instance.
//
// Thread safety: every method of both clocks may be called from any thread
// (a test advances a FakeClock while a monitor thread reads it).
#pragma once

#include <chrono>
#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gpulet::common {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

class RealClock final : public Clock {
 public:
  // The shared instance; never destroyed.
  static RealClock& Get() {
    static RealClock* const kClock = new RealClock();
    return *kClock;
  }
  absl::Time Now() const override {
    return absl::UnixEpoch() +
           absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
  }
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch()) : now_(start) {}

  absl::Time Now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  void Advance(absl::Duration delta) {
    std::lock_guard lock(mu_);
    now_ += delta;
  }
  void Set(absl::Time now) {
    std::lock_guard lock(mu_);
    now_ = now;
  }

 private:
  mutable std::mutex mu_;
  absl::Time now_;  // guarded by mu_
};

}  // namespace gpulet::common
