// What the node agent computes from what it reads, as pure values
// (docs/sharing.md): the node annotation from the kubelet's PodResources
// and the plugin's own Allocate answers, the pending requests the plugin
// must keep fitting, and the pruning of the pending annotation.
//
// Thread safety: functions are pure; an AllocationLedger is a value that
// its owner locks.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "src/sharing/annotations.h"

namespace gpulet::sharing {

// One Allocate answer: `units` units of GPU `gpu` (UUID), the unit IDs.
using Allocation = Placement;

// The plugin's Allocate answers that the kubelet's PodResources does not
// show yet. Allocate does not say which pod it serves, so an answer is
// matched to the first container that shows up after it on the same GPU
// with the same number of units.
class AllocationLedger {
 public:
  void Record(Allocation allocation);
  // A full PodResources listing: each container listed for the first time
  // takes the oldest answer of its GPU and size; answers older than
  // `max_age` are dropped (the kubelet may have failed the admission after
  // Allocate).
  // An answer with unit IDs is matched by them instead: it leaves as soon
  // as all its IDs are among `listed_ids` (the units PodResources lists
  // under any container), whether or not that container was listed before
  // (a restarted kubelet allocates again for the containers it lists).
  void Observe(const std::vector<UsedPod>& listed,
               const std::set<std::string>& listed_ids, absl::Time now,
               absl::Duration max_age);
  const std::vector<Allocation>& unmatched() const { return unmatched_; }

 private:
  std::vector<Allocation> unmatched_;  // oldest first
  std::set<std::string> seen_;         // containers of the last listing
};

// The node annotation: per GPU of `gpus` (units, index, health; `used` is
// recomputed), used = the units the listed containers hold on it plus the
// unmatched Allocate answers for it, which become node.placements.
NodeMemory BuildNodeMemory(const std::string& resource, int64_t unit_mib,
                           absl::Time observed, std::vector<GpuSpace> gpus,
                           std::vector<UsedPod> listed,
                           const std::vector<Allocation>& unmatched);

// The requests the plugin must keep fitting: OutstandingRequests of `node`
// with `unmatched` as its placements (node.placements is ignored).
std::vector<Request> PendingRequests(const Pending& pending,
                                     const NodeMemory& node,
                                     const std::vector<Allocation>& unmatched);

// What the API server says about a pending pod.
enum class PodFate {
  kWaiting,  // exists, not terminal, bound here or not bound yet
  kGone,     // deleted, replaced (other uid), terminal, or bound elsewhere
};

// The pending annotation without the entries whose pod `node` lists with
// all its containers (the kubelet admitted it), whose pod is gone, or that are older than
// `timeout`. `fate` is asked only about entries that are neither listed
// nor timed out.
Pending PrunePending(const Pending& pending, const NodeMemory& node,
                     absl::Time now, absl::Duration timeout,
                     const std::function<PodFate(const PendingPod&)>& fate);

}  // namespace gpulet::sharing
