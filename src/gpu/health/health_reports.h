// HealthReports: what one health monitor has reported unhealthy so far, so
// each GPU, or each MIG instance, is reported at most once until it
// recovers. A report of a whole GPU covers each of its MIG instances. The
// reasons are kept so the reports can be handed to the next monitor
// (CarryOver) as they were made. Used by health_monitor.cc only.
//
// Thread safety: none; the monitor's thread owns it.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "src/gpu/health/xid_policy.h"

namespace gpulet::health {

class HealthReports {
 public:
  // Records `event` (an unhealthy one). False when it was reported already,
  // or its whole GPU was: nothing is recorded then.
  bool Add(const HealthEvent& event);
  // Records `event` as reported by an earlier monitor, unconditionally.
  void Restore(const HealthEvent& event);
  // Forgets every report of GPU `gpu`, its MIG instances' included, so a
  // later fault is reported again.
  void ForgetGpu(int gpu);
  // The reports with their reasons, ordered by GPU, GPU instance and
  // compute instance.
  std::vector<HealthEvent> Export() const;

 private:
  using Key = std::tuple<int, uint32_t, uint32_t>;  // GPU, GI, CI
  static Key KeyOf(const HealthEvent& event);

  absl::flat_hash_map<Key, std::string> reasons_;  // of each reported key
};

// "GPU 3", or "GPU 3 (GPU instance 1, compute instance 0)" for an event of
// a MIG instance, for the log.
std::string EventSubject(const HealthEvent& event);

}  // namespace gpulet::health
