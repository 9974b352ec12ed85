// Sleeper: how the API client waits (rate limit, retry backoff), so tests
// drive those waits with a FakeClock instead of sleeping. A wait ends early
// when its stop_token is requested.
//
// RealSleeper blocks the calling thread; RealSleeper::Get() is a
// process-wide instance. FakeSleeper advances a FakeClock by the requested
// duration at once and records it.
//
// Thread safety: every method of both may be called from any thread.
#pragma once

#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/base/common/clock.h"

namespace gpulet::kube {

class Sleeper {
 public:
  virtual ~Sleeper() = default;
  // Waits `duration` (nothing when <= 0). Returns false when `stop` was
  // requested before or during the wait.
  virtual bool Sleep(absl::Duration duration, std::stop_token stop) = 0;
};

class RealSleeper final : public Sleeper {
 public:
  static RealSleeper& Get() {
    static RealSleeper* const kSleeper = new RealSleeper();
    return *kSleeper;
  }
  bool Sleep(absl::Duration duration, std::stop_token stop) override {
    if (duration <= absl::ZeroDuration()) return !stop.stop_requested();
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    return !cv.wait_for(lock, stop, absl::ToChronoNanoseconds(duration),
                        [] { return false; }) &&
           !stop.stop_requested();
  }
};

class FakeSleeper final : public Sleeper {
 public:
  explicit FakeSleeper(common::FakeClock& clock) : clock_(clock) {}
  bool Sleep(absl::Duration duration, std::stop_token stop) override {
    if (stop.stop_requested()) return false;
    if (duration <= absl::ZeroDuration()) return true;
    clock_.Advance(duration);
    absl::MutexLock lock(&mu_);
    sleeps_.push_back(duration);
    return true;
  }
  std::vector<absl::Duration> sleeps() const {
    absl::MutexLock lock(&mu_);
    return sleeps_;
  }

 private:
  common::FakeClock& clock_;
  mutable absl::Mutex mu_;
  std::vector<absl::Duration> sleeps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::kube
