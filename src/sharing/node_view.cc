#include "src/sharing/node_view.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gpulet::sharing {
namespace {

std::string ContainerKey(const UsedPod& pod, const UsedContainer& c) {
  return absl::StrCat(pod.ns, "/", pod.name, "/", c.name, "@", c.gpu);
}

}  // namespace

void AllocationLedger::Record(Allocation allocation) {
  unmatched_.push_back(std::move(allocation));
}

void AllocationLedger::Observe(const std::vector<UsedPod>& listed,
                               const std::set<std::string>& listed_ids,
                               absl::Time now, absl::Duration max_age) {
  std::erase_if(unmatched_, [&](const Allocation& a) {
    return !a.ids.empty() &&
           std::all_of(a.ids.begin(), a.ids.end(), [&](const std::string& id) {
             return listed_ids.contains(id);
           });
  });
  std::set<std::string> seen;
  for (const UsedPod& pod : listed) {
    for (const UsedContainer& c : pod.containers) {
      std::string key = ContainerKey(pod, c);
      if (!seen_.contains(key)) {
        auto it = std::find_if(unmatched_.begin(), unmatched_.end(),
                               [&](const Allocation& a) {
                                 return a.ids.empty() && a.gpu == c.gpu &&
                                        a.units == c.units;
                               });
        if (it != unmatched_.end()) unmatched_.erase(it);
      }
      seen.insert(std::move(key));
    }
  }
  seen_ = std::move(seen);
  std::erase_if(unmatched_, [&](const Allocation& a) {
    return now - a.time > max_age;
  });
}

NodeMemory BuildNodeMemory(const std::string& resource, int64_t unit_mib,
                           absl::Time observed, std::vector<GpuSpace> gpus,
                           std::vector<UsedPod> listed,
                           const std::vector<Allocation>& unmatched) {
  std::map<std::string, int64_t> used;
  for (const UsedPod& pod : listed) {
    for (const UsedContainer& c : pod.containers) used[c.gpu] += c.units;
  }
  for (const Allocation& a : unmatched) used[a.gpu] += a.units;
  for (GpuSpace& g : gpus) {
    auto it = used.find(g.uuid);
    g.used = it == used.end() ? 0 : it->second;
  }
  NodeMemory node;
  node.resource = resource;
  node.unit_mib = unit_mib;
  node.observed = observed;
  node.gpus = std::move(gpus);
  node.pods = std::move(listed);
  node.placements = unmatched;
  return node;
}

std::vector<Request> PendingRequests(const Pending& pending,
                                     const NodeMemory& node,
                                     const std::vector<Allocation>& unmatched) {
  NodeMemory with_answers = node;
  with_answers.placements = unmatched;
  return OutstandingRequests(pending, with_answers);
}

Pending PrunePending(const Pending& pending, const NodeMemory& node,
                     absl::Time now, absl::Duration timeout,
                     const std::function<PodFate(const PendingPod&)>& fate) {
  Pending out;
  for (const PendingPod& p : pending.pods) {
    if (Admitted(p, node) || now - p.time > timeout) continue;
    if (fate && fate(p) == PodFate::kGone) continue;
    out.pods.push_back(p);
  }
  return out;
}

}  // namespace gpulet::sharing
