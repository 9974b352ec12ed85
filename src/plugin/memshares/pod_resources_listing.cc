// MemoryPublisher's PodResources listings: the units each container holds
// and each GPU's units as the kubelet counts them, read into the ledger
// (memory_publisher.h).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/model/sharing/unit_id.h"
#include "src/plugin/memshares/memory_publisher.h"

namespace gpulet::nodeagent {
namespace {

// The containers holding units of `resource`, one entry per GPU they use,
// with the unit IDs of each entry.
sharing::Listing ListUnits(const std::vector<podresources::Pod>& pods,
                           const std::string& resource) {
  sharing::Listing out;
  for (const podresources::Pod& pod : pods) {
    sharing::UsedPod used;
    used.ns = pod.ns;
    used.name = pod.name;
    for (const podresources::Container& c : pod.containers) {
      std::map<std::string, std::vector<std::string>> per_gpu;
      for (const podresources::Devices& d : c.devices) {
        if (d.resource != resource) continue;
        std::string gpu;
        int64_t k = 0;
        for (const std::string& id : d.ids) {
          if (sharing::ParseMemoryUnitId(id, &gpu, &k)) {
            per_gpu[gpu].push_back(id);
          }
        }
      }
      for (auto& [gpu, ids] : per_gpu) {
        used.containers.push_back(sharing::UsedContainer{
            c.name, gpu, static_cast<int64_t>(ids.size())});
        out.ids[sharing::ListedKey(used, used.containers.back())] =
            std::move(ids);
      }
    }
    if (!used.containers.empty()) out.pods.push_back(std::move(used));
  }
  return out;
}

// The kubelet's count of each GPU's units wins over the device list's.
void ApplyAllocatable(const std::vector<podresources::Devices>& allocatable,
                      const std::string& resource,
                      std::vector<sharing::GpuSpace>* gpus) {
  std::map<std::string, int64_t> units;
  for (const podresources::Devices& d : allocatable) {
    if (d.resource != resource) continue;
    std::string gpu;
    int64_t k = 0;
    for (const std::string& id : d.ids) {
      if (sharing::ParseMemoryUnitId(id, &gpu, &k)) ++units[gpu];
    }
  }
  if (units.empty()) return;  // the kubelet has not seen the resource yet
  for (sharing::GpuSpace& g : *gpus) {
    auto it = units.find(g.uuid);
    g.units = it == units.end() ? 0 : it->second;
  }
}

}  // namespace
absl::Status MemoryPublisher::ReadListing(std::stop_token stop) {
  uint64_t mark = 0;
  {
    absl::MutexLock lock(&mu_);
    auto idle = [this, &stop]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop.stop_requested() ||
             gate_.BusyFor(options_.clock->WallNow()) <= absl::ZeroDuration();
    };
    while (!idle()) {
      mu_.AwaitWithTimeout(absl::Condition(&idle),
                           gate_.BusyFor(options_.clock->WallNow()));
    }
    if (stop.stop_requested()) {
      return absl::CancelledError("stopping: no PodResources listing");
    }
    gate_.set_listing(true);
    mark = ledger_.Mark();
  }
  absl::StatusOr<std::vector<podresources::Pod>> pods = kubelet_.List();
  absl::StatusOr<std::vector<podresources::Devices>> allocatable =
      pods.ok()
          ? kubelet_.Allocatable()
          : absl::StatusOr<std::vector<podresources::Devices>>(pods.status());
  const absl::Time now = options_.clock->WallNow();
  absl::MutexLock lock(&mu_);
  gate_.set_listing(false);
  if (!pods.ok()) return pods.status();
  // One view of the watch's pods for the whole listing.
  const PodWatch::View watched = pod_watch_.Snapshot();
  const std::map<std::string, std::string>& uids = watched.uids;
  sharing::Listing listing = ListUnits(*pods, options_.resource_name);
  // Every pod of the node asking for the resource is listed: an answer the
  // listing does not show served a pod that is gone (deleted before any
  // listing showed it), not one the kubelet still holds units for.
  std::set<std::string> listed;
  for (const sharing::UsedPod& p : listing.pods) {
    listed.insert(absl::StrCat(p.ns, "/", p.name));
  }
  const bool settled =
      watched.listed &&
      std::includes(listed.begin(), listed.end(), watched.asking.begin(),
                    watched.asking.end());
  for (sharing::UsedPod& pod : listing.pods) {
    auto uid = uids.find(absl::StrCat(pod.ns, "/", pod.name));
    if (uid != uids.end()) pod.uid = uid->second;
  }
  listing = sharing::CarryOver(
      ledger_.listing(), std::move(listing),
      [&uids](const sharing::UsedPod& pod) {
        auto uid = uids.find(absl::StrCat(pod.ns, "/", pod.name));
        return uid != uids.end() && (pod.uid.empty() || uid->second == pod.uid);
      });
  ledger_.Observe(std::move(listing), mark, now, options_.pending_timeout,
                  settled);
  listed_gpus_ = gpus_;
  if (allocatable.ok()) {
    ApplyAllocatable(*allocatable, options_.resource_name, &listed_gpus_);
  }
  listed_at_ = now;
  return absl::OkStatus();
}

}  // namespace gpulet::nodeagent
