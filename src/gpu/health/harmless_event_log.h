// HarmlessEventLog: the log lines of the NVML events the health policy did
// not act on (an ignored Xid, a corrected single-bit ECC error, ...). The
// first event of each kind (GPU, event type, Xid) is logged at INFO, later
// ones at verbosity 1; at most a fixed number of kinds is remembered, so a
// flood of odd Xid values cannot grow memory. Used by health_monitor.cc
// only.
//
// Thread safety: none; the monitor's thread owns it.
#pragma once

#include <cstdint>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "src/gpu/health/xid_policy.h"
#include "src/gpu/nvml/library.h"

namespace gpulet::health {

class HarmlessEventLog {
 public:
  // Logs `event` of GPU `gpu`, ignored under `options`, with why.
  void Log(const nvml::Event& event, int gpu, const MonitorOptions& options);

 private:
  absl::flat_hash_set<std::tuple<int, uint64_t, uint64_t>> logged_;
};

}  // namespace gpulet::health
