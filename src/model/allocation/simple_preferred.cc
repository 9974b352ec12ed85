#include "src/model/allocation/simple_preferred.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "src/model/pluginapi/preferred_request.h"

namespace gpulet::allocation {

using pluginapi::Device;
using pluginapi::DeviceSnapshot;
using pluginapi::PreferredRequest;
using pluginapi::ValidatePreferred;
namespace {

// NUMA nodes the rest of the allocation should stay on.
absl::flat_hash_set<int64_t> PreferredNumaNodes(
    const DeviceSnapshot& snapshot, const std::vector<std::string>& must,
    const std::vector<const Device*>& candidates) {
  absl::flat_hash_set<int64_t> nodes;
  for (const std::string& id : must) {
    for (int64_t n : snapshot.Find(id)->numa_nodes) nodes.insert(n);
  }
  if (!nodes.empty()) return nodes;
  // std::map iterates node IDs in ascending order, so ties go to the lowest.
  std::map<int64_t, int> count;
  for (const Device* d : candidates) {
    for (int64_t n : d->numa_nodes) ++count[n];
  }
  int best = 0;
  int64_t best_node = 0;
  for (const auto& [node, c] : count) {
    if (c > best) std::tie(best, best_node) = std::tie(c, node);
  }
  if (best > 0) nodes.insert(best_node);
  return nodes;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SimplePreferred(
    const DeviceSnapshot& snapshot, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  absl::StatusOr<PreferredRequest> request =
      ValidatePreferred(snapshot, available, must_include, size);
  if (!request.ok()) return request.status();

  const absl::flat_hash_set<std::string> must(request->must_include.begin(),
                                              request->must_include.end());
  std::vector<const Device*> candidates;
  for (const std::string& id : request->available) {
    if (!must.contains(id)) candidates.push_back(snapshot.Find(id));
  }
  const absl::flat_hash_set<int64_t> numa =
      PreferredNumaNodes(snapshot, request->must_include, candidates);
  auto on_numa = [&numa](const Device* d) {
    return std::any_of(d->numa_nodes.begin(), d->numa_nodes.end(),
                       [&numa](int64_t n) { return numa.contains(n); });
  };
  auto key = [&on_numa](const Device* d) {
    return std::make_tuple(!d->healthy, !on_numa(d),
                           d->gpu_index < 0 ? INT_MAX : d->gpu_index,
                           std::cref(d->id));
  };
  std::sort(
      candidates.begin(), candidates.end(),
      [&key](const Device* a, const Device* b) { return key(a) < key(b); });

  std::vector<std::string> chosen = request->must_include;
  for (const Device* d : candidates) {
    if (chosen.size() == static_cast<size_t>(size)) break;
    chosen.push_back(d->id);
  }
  return chosen;
}

}  // namespace gpulet::allocation
