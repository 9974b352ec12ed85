// ServedResources: the resources the device plugin serves (one PluginRunner
// each) and the health their device lists carry. It keeps the health
// sources that belong to no single feature: the HealthBook (monitor faults
// and discovery failures), the node's GPU UUIDs, and which GPUs' MPS
// control daemons are up. Health reaches the lists from the health monitor
// (OnGpuHealth), the MPS supervisor (OnMps, for memory units and
// sharing.mps replicas) and the passthrough GPUs
// (SetPassthroughHealth); whole lists are composed by ComposeDeviceHealth
// (health_composition.h). Every change to the memory-unit list goes to the
// memory shares' listener; every device's health to gpulet_device_healthy.
//
// Thread safety: thread-safe. Serve, Clear and driving the runners (the
// pointers Runners() returns stay valid until the next Serve or Clear)
// are the loop thread's; the reports come from the monitor's, the
// supervisor's and the passthrough watcher's threads and from the plugin
// servers' threads. One mutex guards the state; the memory-units listener runs
// under it (it must not call back), and no runner is started or destroyed under
// it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/base/metrics/gpulet_metrics.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/health/xid_policy.h"
#include "src/model/resources/passthrough.h"
#include "src/plugin/daemon/health_book.h"
#include "src/plugin/daemon/health_composition.h"
#include "src/plugin/daemon/plugin_runner.h"
#include "src/plugin/daemon/prepared_resource.h"

namespace gpulet::daemon {

// Called with the memory-unit resource's device list after it changed, or
// with null when no such resource is served.
using MemoryUnitsListener =
    std::function<void(const pluginapi::DeviceSnapshot* units)>;

class ServedResources {
 public:
  // `metrics` outlives this object.
  ServedResources(const metrics::GpuletMetrics* metrics,
                  MemoryUnitsListener on_memory_units);
  ServedResources(const ServedResources&) = delete;
  ServedResources& operator=(const ServedResources&) = delete;

  // The node's GPUs into the book: UUIDs by index, GPUs gone from the node
  // forgotten, and this discovery's failures replacing the previous ones.
  void RecordNode(const device::Node& node) ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets the monitor's entries (health checks are off: nothing could
  // bring those GPUs back), keeping the discovery failures.
  void KeepOnlyDiscoveryFailures() ABSL_LOCKS_EXCLUDED(mu_);

  // Brings the runners to `prepared`: existing resources updated in place,
  // new ones started (and registered), missing ones stopped. Each list's
  // health is composed under the lock the reports take, so no report falls
  // between building a list and publishing it. Loop thread.
  void Serve(
      std::vector<PreparedResource> prepared,
      const pluginapi::PreferredHandler& preferred,
      const RunnerOptions& options,
      const std::map<std::string, resources::PassthroughHealth>& passthrough)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The runners, for the loop thread to drive without holding the lock.
  std::vector<PluginRunner*> Runners() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops serving: the runners' metrics removed, the runners destroyed
  // (outside the lock), the book, the UUIDs and MPS's state cleared. Loop
  // thread, after every reporter has stopped.
  void Clear() ABSL_LOCKS_EXCLUDED(mu_);

  // The health monitor's event (its thread).
  void OnGpuHealth(const health::HealthEvent& event) ABSL_LOCKS_EXCLUDED(mu_);
  // MPS for memory shares turned on or off; no daemon is up yet.
  void ResetMps(bool enabled) ABSL_LOCKS_EXCLUDED(mu_);
  // The GPUs (UUIDs) whose sharing.mps replicas follow their MPS control
  // daemon (MpsDaemons, on the loop thread before Serve); the replicas of
  // GPUs no longer listed follow the book alone again.
  void SetMpsReplicas(std::set<std::string> gpus) ABSL_LOCKS_EXCLUDED(mu_);
  // The supervisor's report (its thread): the GPU's memory units and
  // sharing.mps replicas follow.
  void OnMps(const std::string& uuid, bool up, const std::string& reason)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A passthrough device's health changed (any thread): its device in the
  // passthrough resources follows.
  void SetPassthroughHealth(const std::string& id, bool healthy)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Served {
    std::unique_ptr<PluginRunner> runner;
    ResourceRole role = ResourceRole::kGpus;
  };
  HealthSources Sources(
      const std::map<std::string, resources::PassthroughHealth>& passthrough)
      const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Updates or adds the runner of `p`; returns the added one, else null.
  PluginRunner* ServeOne(PreparedResource p,
                         const pluginapi::PreferredHandler& preferred,
                         const RunnerOptions& options,
                         const HealthSources& sources)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `event` names a MIG instance some advertised device is of.
  bool MigScoped(const health::HealthEvent& event) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Brings the served devices that depend on an MPS daemon (memory units
  // while MPS for memory shares is on, replicas) of `only_gpu` (all GPUs
  // when empty) to the book's health and MPS's; returns how many changed.
  int ApplyMpsHealth(const std::string& only_gpu = "")
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The devices of `s` that `which` selects, their health composed again
  // from the sources alone; returns how many changed.
  int Recompose(const Served& s,
                const std::function<bool(const pluginapi::Device&)>& which)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // gpu_index < 0: every device; else only that GPU's devices.
  void PublishDeviceHealth(int gpu_index = -1)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishMemoryUnits() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const metrics::GpuletMetrics* const metrics_;
  const MemoryUnitsListener on_memory_units_;
  mutable absl::Mutex mu_;
  // Added and removed on the loop thread; the runners themselves are driven
  // from the loop thread only, their DeviceLists from any.
  std::vector<Served> served_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::string> gpu_uuids_ ABSL_GUARDED_BY(mu_);
  HealthBook book_ ABSL_GUARDED_BY(mu_);
  // MPS for memory shares: whether it is on, and the GPUs whose daemon is
  // up (the supervisor's reports).
  bool mps_enabled_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> mps_up_ ABSL_GUARDED_BY(mu_);
  // sharing.mps: the GPUs whose replicas follow their daemon.
  std::set<std::string> mps_replicas_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::daemon
