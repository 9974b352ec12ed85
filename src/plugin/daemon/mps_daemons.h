// MpsDaemons: the MPS control daemons gpulet runs (docs/sharing.md "MPS"):
// one per GPU that shares memory with MPS (sharing.memory.mps), and one per
// GPU whose replicas sharing.mps advertises, set to EXCLUSIVE_PROCESS and
// told NVIDIA's default limits for its replica count (pinned device memory
// = memory / replicas, active threads = 100 / replicas). One
// mps::Supervisor runs them all, kept across reloads while the control
// program, nvidia-smi and the MPS root stay; a reload that changes a GPU's
// replica count restarts its daemon with the new limits. Its reports go to
// ServedResources (ResetMps, SetMpsReplicas, OnMps), where a memory unit
// or a sharing.mps replica is advertised Healthy only while its GPU's
// daemon is up.
//
// Thread safety: not thread-safe; the loop thread only. The supervisor
// reports on its own thread, straight to ServedResources; Ensure and Stop
// must not be called with ServedResources' lock held (destroying the
// supervisor joins that thread).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/base/config/config.h"
#include "src/base/metrics/registry.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/mps/supervisor.h"
#include "src/plugin/daemon/prepared_resource.h"
#include "src/plugin/daemon/served_resources.h"

namespace gpulet::daemon {

// What sharing.mps asks of the daemons: each replicated full GPU's daemon
// settings, and every GPU (or MIG device) whose replicas follow a daemon.
// MIG devices are listed without a daemon: MPS replicas of MIG devices are
// not supported (NVIDIA's plugin refuses them too), so they stay Unhealthy.
struct SharingMpsPlan {
  std::map<std::string, mps::DaemonSettings> daemons;
  std::set<std::string> replicas;
};
// The plan for `prepared`'s GPU resources on `node`; empty unless
// `config`'s sharing strategy is MPS. Pure.
SharingMpsPlan PlanSharingMps(const config::Config& config,
                              const std::vector<PreparedResource>& prepared,
                              const device::Node& node);

class MpsDaemons {
 public:
  // `registry` and `served` outlive this object.
  MpsDaemons(metrics::Registry& registry, ServedResources& served);
  MpsDaemons(const MpsDaemons&) = delete;
  MpsDaemons& operator=(const MpsDaemons&) = delete;

  // The supervisor `config` asks for, told the memory-unit GPUs of
  // `prepared` and the GPUs its sharing.mps replicates on `node`; none
  // without sharing.memory.mps and sharing.mps.
  void Ensure(const config::Config& config,
              const std::vector<PreparedResource>& prepared,
              const device::Node& node);
  // Every daemon told to quit.
  void Stop();

 private:
  // The supervisor for `config`'s control program, nvidia-smi and MPS
  // root, kept when they are those of the running one; false (logged)
  // when there is none.
  bool EnsureSupervisor(const config::Config& config, bool memory_mps);

  metrics::Registry& registry_;
  ServedResources& served_;
  std::unique_ptr<mps::Supervisor> supervisor_;
  std::string key_;  // programs and root, to tell a reload's need
};

}  // namespace gpulet::daemon
