#include "src/model/sharing/node_view.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gpulet::sharing {
namespace {

bool SharesAUnit(const std::vector<std::string>& ids,
                 const std::set<std::string>& taken) {
  return std::any_of(ids.begin(), ids.end(),
                     [&](const std::string& id) { return taken.contains(id); });
}

}  // namespace

std::string ListedKey(const UsedPod& pod, const UsedContainer& c) {
  return absl::StrCat(pod.ns, "/", pod.name, "/", c.name, "@", c.gpu);
}

void AllocationLedger::Record(Allocation allocation) {
  const std::set<std::string> taken(allocation.ids.begin(),
                                    allocation.ids.end());
  std::erase_if(answers_, [&](const Answer& a) {
    return SharesAUnit(a.allocation.ids, taken);
  });
  answers_.push_back({std::move(allocation), ++recorded_});
}

void AllocationLedger::Forget(const Allocation& allocation) {
  std::erase_if(answers_, [&](const Answer& a) {
    return a.allocation.gpu == allocation.gpu &&
           a.allocation.ids == allocation.ids;
  });
}

void AllocationLedger::Observe(Listing listing, uint64_t mark, absl::Time now,
                               absl::Duration max_age, bool settled) {
  std::set<std::string> listed;
  for (const auto& [key, ids] : listing.ids) {
    if (!listing.carried.contains(key)) listed.insert(ids.begin(), ids.end());
  }
  std::erase_if(answers_, [&](const Answer& a) {
    return (a.seq <= mark &&
            (settled || SharesAUnit(a.allocation.ids, listed))) ||
           now - a.allocation.time > max_age;
  });
  listing_ = std::move(listing);
  listing_mark_ = mark;
  listed_once_ = true;
}

std::vector<UsedPod> AllocationLedger::Listed() const {
  std::set<std::string> taken, any;
  for (const Answer& a : answers_) {
    any.insert(a.allocation.ids.begin(), a.allocation.ids.end());
    if (a.seq > listing_mark_) {
      taken.insert(a.allocation.ids.begin(), a.allocation.ids.end());
    }
  }
  std::vector<UsedPod> out;
  for (const UsedPod& pod : listing_.pods) {
    UsedPod kept = pod;
    std::erase_if(kept.containers, [&](const UsedContainer& c) {
      const std::string key = ListedKey(pod, c);
      auto ids = listing_.ids.find(key);
      return ids != listing_.ids.end() &&
             SharesAUnit(ids->second,
                         listing_.carried.contains(key) ? any : taken);
    });
    if (!kept.containers.empty()) out.push_back(std::move(kept));
  }
  return out;
}

std::vector<Allocation> AllocationLedger::unmatched() const {
  std::vector<Allocation> out;
  out.reserve(answers_.size());
  for (const Answer& a : answers_) out.push_back(a.allocation);
  return out;
}

Listing CarryOver(const Listing& before, Listing now,
                  const std::function<bool(const UsedPod&)>& exists) {
  std::set<std::string> pods, units;
  for (const UsedPod& pod : now.pods) pods.insert(pod.ns + "/" + pod.name);
  for (const auto& [key, ids] : now.ids) units.insert(ids.begin(), ids.end());
  for (const UsedPod& pod : before.pods) {
    if (pods.contains(pod.ns + "/" + pod.name) || !exists(pod)) continue;
    UsedPod kept = pod;
    std::erase_if(kept.containers, [&](const UsedContainer& c) {
      auto ids = before.ids.find(ListedKey(pod, c));
      return ids == before.ids.end() || SharesAUnit(ids->second, units);
    });
    for (const UsedContainer& c : kept.containers) {
      const std::string key = ListedKey(pod, c);
      now.ids[key] = before.ids.at(key);
      now.carried.insert(key);
    }
    if (!kept.containers.empty()) now.pods.push_back(std::move(kept));
  }
  return now;
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
