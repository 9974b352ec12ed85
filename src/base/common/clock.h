// Clock: the one seam through which gpulet reads the time and waits, so
// tests drive time-dependent code with explicit instants instead of
// sleeping.
//
//   Now()      the monotonic clock (CLOCK_MONOTONIC, as an absl::Time that
//              many seconds after the Unix epoch): every deadline, timeout,
//              quiet period and retry delay is measured with it, so a step
//              of the wall clock (NTP at boot, an operator setting the
//              date) neither stalls nor hastens them. Its instants are for
//              measuring intervals only, never for display.
//   WallNow()  the wall clock, only for values written out: timestamps in
//              annotations other processes read, in logs and reports.
//   Sleep()    waits a duration on the monotonic clock; a stop request ends
//              the wait at once.
//
// RealClock reads the system's clocks and blocks the calling thread in
// Sleep(); RealClock::Get() is a process-wide instance. FakeClock holds one
// instant, read by both Now() and WallNow(), that only moves when a test
// calls Advance() or Set() or something calls Sleep() (which advances it by
// the duration at once and records it). Clocks are borrowed by their users,
// never owned.
//
// Thread safety: every method of both clocks may be called from any thread
// (a test advances a FakeClock while a monitor thread reads it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gpulet::common {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic: for deadlines and intervals.
  virtual absl::Time Now() const = 0;
  // Wall clock: for timestamps that are written out.
  virtual absl::Time WallNow() const = 0;
  // Waits `duration` (nothing when <= 0). Returns false when `stop` was
  // requested before or during the wait.
  virtual bool Sleep(absl::Duration duration,
                     std::stop_token stop = {}) const = 0;
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
           absl::FromChrono(
               std::chrono::steady_clock::now().time_since_epoch());
  }
  absl::Time WallNow() const override { return absl::Now(); }
  bool Sleep(absl::Duration duration,
             std::stop_token stop = {}) const override {
    if (duration <= absl::ZeroDuration()) return !stop.stop_requested();
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    return !cv.wait_for(lock, stop, absl::ToChronoNanoseconds(duration), [] {
      return false;
    }) && !stop.stop_requested();
  }
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch()) : now_(start) {}

  absl::Time Now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  absl::Time WallNow() const override { return Now(); }
  // Advances the time by `duration` at once and records it.
  bool Sleep(absl::Duration duration,
             std::stop_token stop = {}) const override {
    if (stop.stop_requested()) return false;
    if (duration <= absl::ZeroDuration()) return true;
    std::lock_guard lock(mu_);
    now_ += duration;
    sleeps_.push_back(duration);
    return true;
  }

  void Advance(absl::Duration delta) {
    std::lock_guard lock(mu_);
    now_ += delta;
  }
  void Set(absl::Time now) {
    std::lock_guard lock(mu_);
    now_ = now;
  }
  // The durations Sleep() was asked for, oldest first (waits of zero
  // excluded).
  std::vector<absl::Duration> sleeps() const {
    std::lock_guard lock(mu_);
    return sleeps_;
  }

 private:
  mutable std::mutex mu_;
  mutable absl::Time now_;                      // guarded by mu_
  mutable std::vector<absl::Duration> sleeps_;  // guarded by mu_
};

}  // namespace gpulet::common
