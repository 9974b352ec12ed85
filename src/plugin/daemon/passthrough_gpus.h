// PassthroughGpus: the GPUs (and mdevs) served to VMs (docs/passthrough.md):
// their resources planned from sysfs and the configuration, Allocate over
// their group nodes, and their health, from the plan, from the passthrough
// watcher's re-reads and from Allocate finding a group node gone. A health
// change reaches the served device lists through
// ServedResources::SetPassthroughHealth and gpulet_passthrough_viable; a
// binding change that needs a new plan (a GPU bound to vfio-pci since, an
// mdev created) is asked of the event loop through `request_replan`.
//
// Thread safety: thread-safe. Prepare, Record, EnsureWatcher, Stop and the
// re-plan calls are the loop thread's; the watcher's thread and gRPC
// threads (Allocate) report. Its mutex is taken before ServedResources'
// (never the other way round) and is not held while the watcher is
// joined.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "src/base/config/config.h"
#include "src/base/metrics/gpulet_metrics.h"
#include "src/gpu/health/passthrough_watcher.h"
#include "src/model/resources/passthrough.h"
#include "src/plugin/daemon/prepared_resource.h"
#include "src/plugin/daemon/served_resources.h"

namespace gpulet::daemon {

class PassthroughGpus {
 public:
  // `metrics` and `served` outlive this object; `request_replan` wakes the
  // loop, which then calls BeginReplan.
  PassthroughGpus(std::string socket_prefix,
                  const metrics::GpuletMetrics* metrics,
                  ServedResources& served,
                  std::function<void()> request_replan);
  ~PassthroughGpus();
  PassthroughGpus(const PassthroughGpus&) = delete;
  PassthroughGpus& operator=(const PassthroughGpus&) = delete;

  struct Planned {
    std::vector<PreparedResource> prepared;
    resources::PassthroughPlan plan;
  };
  // The passthrough resources `config` selects from sysfs, never failing:
  // a sysfs that cannot be read, or a selector matching nothing, is logged
  // and the container GPUs are served all the same.
  Planned Prepare(const config::Config& config) ABSL_LOCKS_EXCLUDED(mu_);
  // The plan's health, as the health of record and in the metric; before
  // the served lists are brought to the plan.
  void Record(const resources::PassthroughPlan& plan) ABSL_LOCKS_EXCLUDED(mu_);
  // Each selected device's health (by PCI address or mdev UUID).
  std::map<std::string, resources::PassthroughHealth> Health() const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The watcher `config` asks for, kept while its roots and period stay.
  void EnsureWatcher(const config::Config& config) ABSL_LOCKS_EXCLUDED(mu_);
  // Stops serving: the watcher stopped, the plan's state forgotten.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the watcher asked for a new plan; if so, what was selected is
  // kept selected by the plans made until EndReplan.
  bool BeginReplan() ABSL_LOCKS_EXCLUDED(mu_);
  void EndReplan();

 private:
  void StopWatcher() ABSL_LOCKS_EXCLUDED(mu_);
  // On the watcher's thread: each selected device's health from a fresh
  // read, and a re-plan asked for when a GPU must leave the container
  // resources or an mdev appeared.
  void OnInventory(const absl::StatusOr<vfio::Inventory>& inventory)
      ABSL_LOCKS_EXCLUDED(mu_);
  void AskReplanIfNeeded(const vfio::Inventory& inventory)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // From Allocate (a plugin server's thread): the GPU's group node is gone.
  void OnVanished(const std::string& address, const std::string& reason)
      ABSL_LOCKS_EXCLUDED(mu_);
  void SetHealth(const std::string& address,
                 const resources::PassthroughHealth& health)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string socket_prefix_;
  const metrics::GpuletMetrics* const metrics_;
  ServedResources& served_;
  const std::function<void()> request_replan_;
  mutable absl::Mutex mu_;
  // Each selected GPU's health by PCI address (each advertised mdev's by
  // UUID, listed in mdevs_).
  std::map<std::string, resources::PassthroughHealth> health_
      ABSL_GUARDED_BY(mu_);
  std::set<std::string> mdevs_ ABSL_GUARDED_BY(mu_);
  // What the last plan took out of the container resources, the section it
  // was made from, its roots, and whether the watcher asked for a new plan.
  std::set<std::string> selected_ ABSL_GUARDED_BY(mu_);
  config::Passthrough config_ ABSL_GUARDED_BY(mu_);
  vfio::Roots roots_ ABSL_GUARDED_BY(mu_);
  bool replan_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<health::PassthroughWatcher> watcher_ ABSL_GUARDED_BY(mu_);
  // The loop thread's: selected again by a re-plan whatever their driver;
  // and the watcher's key (roots, period), to tell whether a reload needs a
  // new one.
  std::set<std::string> keep_;
  std::string watcher_key_;
};

}  // namespace gpulet::daemon
