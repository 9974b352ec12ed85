// MpsDaemons: MPS for memory shares (docs/sharing.md "MPS"): one control
// daemon per GPU that shares memory, run by an mps::Supervisor kept across
// reloads while the control program and the MPS root stay. Its reports go
// to ServedResources (ResetMps, OnMps), where a memory unit is advertised
// Healthy only while its GPU's daemon is up.
//
// Thread safety: not thread-safe; the loop thread only. The supervisor
// reports on its own thread, straight to ServedResources; Ensure and Stop
// must not be called with ServedResources' lock held (destroying the
// supervisor joins that thread).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/base/config/config.h"
#include "src/base/metrics/registry.h"
#include "src/gpu/mps/supervisor.h"
#include "src/plugin/daemon/prepared_resource.h"
#include "src/plugin/daemon/served_resources.h"

namespace gpulet::daemon {

class MpsDaemons {
 public:
  // `registry` and `served` outlive this object.
  MpsDaemons(metrics::Registry& registry, ServedResources& served);
  MpsDaemons(const MpsDaemons&) = delete;
  MpsDaemons& operator=(const MpsDaemons&) = delete;

  // The supervisor `config` asks for, told the memory-unit GPUs of
  // `prepared`; none without sharing.memory.mps.
  void Ensure(const config::Config& config,
              const std::vector<PreparedResource>& prepared);
  // Every daemon told to quit.
  void Stop();

 private:
  metrics::Registry& registry_;
  ServedResources& served_;
  std::unique_ptr<mps::Supervisor> supervisor_;
  std::string key_;  // control program and root, to tell a reload's need
};

}  // namespace gpulet::daemon
