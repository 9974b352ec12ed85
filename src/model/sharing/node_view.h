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
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "src/model/sharing/annotations.h"

namespace gpulet::sharing {

// One Allocate answer: `units` units of GPU `gpu` (UUID), the unit IDs.
using Allocation = Placement;

// A PodResources listing: the containers holding units (one entry per GPU
// each) and the unit IDs each entry holds, by ListedKey.
struct Listing {
  std::vector<UsedPod> pods;
  std::map<std::string, std::vector<std::string>> ids;
  // Keys of the entries CarryOver kept from an earlier listing: stale, so
  // they never take an answer's units, and any answer takes theirs.
  std::set<std::string> carried;
};
// "<namespace>/<pod>/<container>@<gpu>": a container's entry on one GPU.
std::string ListedKey(const UsedPod& pod, const UsedContainer& c);

// What the node agent knows of the node's allocation: the last
// PodResources listing and the plugin's Allocate answers the kubelet may
// not list yet. Allocate does not say which pod it serves, so answers are
// matched by their unit IDs, and no unit ID is ever counted twice: the
// kubelet hands out only units it holds free, so when an answer and an
// older entry (listed or answered) share a unit, the older one no longer
// holds it (its pod was deleted, maybe while the kubelet was down, or a
// restarted kubelet allocated the same container again) and leaves.
class AllocationLedger {
 public:
  // Answers recorded so far; taken just before reading a listing, it
  // tells answers the listing may show from those it cannot.
  uint64_t Mark() const { return recorded_; }
  // An Allocate answer; an older answer sharing a unit ID leaves.
  void Record(Allocation allocation);
  // Takes back an answer recorded with exactly these unit IDs of this GPU
  // (a preferred choice that could not be recorded on the Node).
  void Forget(const Allocation& allocation);
  // A full listing, read after Mark() returned `mark`. An answer recorded
  // before it leaves when any of its unit IDs is listed (under the
  // container it served, or under one that got the units since: the
  // admission failed after Allocate); answers older than `max_age` leave
  // (never listed: the admission failed, or the pod went away first).
  // `settled`: the caller knows that no pod outside the listing can hold
  // units (every pod of the node that asks for the resource and still
  // exists is listed), so an answer recorded before the listing that it
  // does not show served a pod that went away, and leaves now.
  void Observe(Listing listing, uint64_t mark, absl::Time now,
               absl::Duration max_age, bool settled = false);
  // The last listing's containers, without those holding a unit of an
  // answer recorded after it.
  std::vector<UsedPod> Listed() const;
  // The last listing as read (with the containers carried over into it).
  const Listing& listing() const { return listing_; }
  std::vector<Allocation> unmatched() const;
  bool listed_once() const { return listed_once_; }

 private:
  struct Answer {
    Allocation allocation;
    uint64_t seq = 0;  // the Mark() after Record
  };
  std::vector<Answer> answers_;  // oldest first, no unit ID twice
  uint64_t recorded_ = 0;
  Listing listing_;
  uint64_t listing_mark_ = 0;
  bool listed_once_ = false;
};

// `now` (a new listing) with the containers of `before` (the last one)
// whose pod it no longer lists but `exists` says the API server still has
// (being deleted: the kubelet's List shows active pods only, yet its
// device manager holds their units until it has dropped them, which a
// restarted kubelet does only once it has caught up), unless `now` lists
// one of their units under another container.
Listing CarryOver(const Listing& before, Listing now,
                  const std::function<bool(const UsedPod&)>& exists);

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
// all its containers (the kubelet admitted it), whose pod is gone, or that are
// older than `timeout`. `fate` is asked only about entries that are neither
// listed nor timed out.
Pending PrunePending(const Pending& pending, const NodeMemory& node,
                     absl::Time now, absl::Duration timeout,
                     const std::function<PodFate(const PendingPod&)>& fate);

}  // namespace gpulet::sharing
