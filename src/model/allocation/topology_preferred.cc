#include "src/model/allocation/topology_preferred.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "src/model/allocation/best_set.h"
#include "src/model/allocation/simple_preferred.h"
#include "src/model/pluginapi/preferred_request.h"

namespace gpulet::allocation {
namespace {

// Matrix positions of `ids` in order, or false if any cannot be mapped
// one-to-one (then the caller falls back).
bool ToPositions(const pluginapi::DeviceSnapshot& snapshot,
                 const absl::flat_hash_map<int, int>& position_of,
                 const std::vector<std::string>& ids,
                 absl::flat_hash_map<int, std::string>& id_at,
                 std::vector<int>& out) {
  for (const std::string& id : ids) {
    const pluginapi::Device* d = snapshot.Find(id);
    if (d == nullptr || d->gpu_index < 0) return false;
    auto it = position_of.find(d->gpu_index);
    if (it == position_of.end()) return false;
    auto [slot, inserted] = id_at.try_emplace(it->second, id);
    if (!inserted && slot->second != id) return false;  // shared GPU
    out.push_back(it->second);
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> TopologyPreferred(
    const ScoreMatrix& m, const pluginapi::DeviceSnapshot& snapshot,
    const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  absl::StatusOr<pluginapi::PreferredRequest> request =
      pluginapi::ValidatePreferred(snapshot, available, must_include, size);
  if (!request.ok()) return request.status();

  absl::flat_hash_map<int, int> position_of;
  for (int p = 0; p < m.size(); ++p) {
    position_of[static_cast<int>(m.gpu_index()[p])] = p;
  }
  absl::flat_hash_map<int, std::string> id_at;
  std::vector<int> avail, must;
  if (!ToPositions(snapshot, position_of, request->available, id_at, avail) ||
      !ToPositions(snapshot, position_of, request->must_include, id_at, must)) {
    return allocation::SimplePreferred(snapshot, available, must_include, size);
  }
  absl::StatusOr<std::vector<int>> best =
      BestSet(m, avail, must, request->size);
  if (!best.ok()) return best.status();

  std::vector<std::string> answer = request->must_include;
  absl::flat_hash_map<int, bool> is_must;
  for (int p : must) is_must[p] = true;
  for (int p : *best) {
    if (!is_must.contains(p)) answer.push_back(id_at[p]);
  }
  return answer;
}

pluginapi::PreferredHandler MakeTopologyPreferred(
    std::shared_ptr<const ScoreMatrix> m) {
  return [m = std::move(m)](const pluginapi::DeviceSnapshot& snapshot,
                            const std::vector<std::string>& available,
                            const std::vector<std::string>& must_include,
                            int size) {
    return TopologyPreferred(*m, snapshot, available, must_include, size);
  };
}

}  // namespace gpulet::allocation
