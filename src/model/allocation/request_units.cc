#include "src/model/allocation/request_units.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gpulet::allocation {
namespace {

using Index = absl::flat_hash_map<absl::string_view, const pluginapi::Device*>;

// Unique devices of `ids` in order; false (with `unknown` set) when an ID is
// not in the index.
bool Resolve(const Index& index, const std::vector<std::string>& ids,
             std::vector<const pluginapi::Device*>& out, std::string& unknown) {
  absl::flat_hash_set<const pluginapi::Device*> seen;
  for (const std::string& id : ids) {
    auto it = index.find(absl::string_view(id));
    if (it == index.end()) {
      unknown = id;
      return false;
    }
    if (seen.insert(it->second).second) out.push_back(it->second);
  }
  return true;
}

void Classify(ResolvedRequest& r) {
  absl::flat_hash_set<int> gpus;
  for (const pluginapi::Device* d : r.available) {
    if (d->gpu_instance_id >= 0) r.any_mig = true;
    if (d->replica >= 0) r.any_replica = true;
    if (d->gpu_index < 0) r.unplaced = true;
    if (d->gpu_index >= 0 && !gpus.insert(d->gpu_index).second) {
      r.shared_gpu = true;
    }
  }
}

}  // namespace

absl::StatusOr<ResolvedRequest> ResolveRequest(
    const pluginapi::DeviceSnapshot& snapshot,
    const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  if (size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation_size must be at least 1, got ", size));
  }
  Index index;
  index.reserve(snapshot.devices.size());
  for (const pluginapi::Device& d : snapshot.devices) {
    index.try_emplace(absl::string_view(d.id), &d);
  }
  ResolvedRequest r;
  r.size = size;
  std::string unknown;
  if (!Resolve(index, available, r.available, unknown)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown device: ", unknown));
  }
  const absl::flat_hash_set<const pluginapi::Device*> in_available(
      r.available.begin(), r.available.end());
  for (const std::string& id : must_include) {
    auto it = index.find(absl::string_view(id));
    if (it == index.end() || !in_available.contains(it->second)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "must_include_deviceIDs entry ", id, " is not in available_deviceIDs",
          it == index.end() ? " (unknown device)" : ""));
    }
  }
  Resolve(index, must_include, r.must_include, unknown);
  if (r.must_include.size() > static_cast<size_t>(size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("must_include_deviceIDs holds ", r.must_include.size(),
                     " devices, more than allocation_size ", size));
  }
  if (static_cast<size_t>(size) > r.available.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation_size ", size, " exceeds the ",
                     r.available.size(), " available devices"));
  }
  Classify(r);
  return r;
}

ScoreMatrix NumaMatrix(const pluginapi::DeviceSnapshot& snapshot) {
  // gpu_index -> NUMA nodes of its devices (ordered, so positions ascend).
  std::map<int, absl::flat_hash_set<int64_t>> numa;
  for (const pluginapi::Device& d : snapshot.devices) {
    if (d.gpu_index < 0) continue;
    numa[d.gpu_index].insert(d.numa_nodes.begin(), d.numa_nodes.end());
  }
  std::vector<unsigned> index;
  std::vector<const absl::flat_hash_set<int64_t>*> nodes;
  for (const auto& [gpu, set] : numa) {
    index.push_back(static_cast<unsigned>(gpu));
    nodes.push_back(&set);
  }
  const size_t n = index.size();
  std::vector<int64_t> scores(n * n, 0);
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      for (int64_t node : *nodes[a]) {
        if (nodes[b]->contains(node)) scores[a * n + b] = 1;
      }
    }
  }
  return ScoreMatrix(std::move(index), std::move(scores));
}

namespace {

// Positions of every gpu_index in `m`; false if a device of the request
// (available or already allocated) has a GPU the matrix does not know.
bool Positions(const ScoreMatrix& m, const pluginapi::DeviceSnapshot& snapshot,
               absl::flat_hash_map<int, int>& position_of) {
  for (int p = 0; p < m.size(); ++p) {
    position_of[static_cast<int>(m.gpu_index()[p])] = p;
  }
  for (const pluginapi::Device& d : snapshot.devices) {
    if (d.gpu_index >= 0 && !position_of.contains(d.gpu_index)) return false;
  }
  return true;
}

bool PickOrder(const pluginapi::Device* a, const pluginapi::Device* b) {
  return std::tie(a->replica, a->id) < std::tie(b->replica, b->id);
}

}  // namespace

UnitModel BuildUnits(std::shared_ptr<const ScoreMatrix> m,
                     const pluginapi::DeviceSnapshot& snapshot,
                     const ResolvedRequest& request) {
  UnitModel model;
  absl::flat_hash_map<int, int> position_of;
  if (m == nullptr || !Positions(*m, snapshot, position_of)) {
    m = std::make_shared<const ScoreMatrix>(NumaMatrix(snapshot));
    position_of.clear();
    Positions(*m, snapshot, position_of);
  }
  model.matrix = std::move(m);
  model.needed = request.size - static_cast<int>(request.must_include.size());

  enum State : char { kAllocated, kFree, kMust };
  absl::flat_hash_map<const pluginapi::Device*, State> state;
  for (const pluginapi::Device* d : request.available) state[d] = kFree;
  for (const pluginapi::Device* d : request.must_include) state[d] = kMust;

  // (gpu position, gpu instance, compute instance) -> unit
  std::map<std::tuple<int, int, int>, Unit> units;
  for (const pluginapi::Device& d : snapshot.devices) {
    if (d.gpu_index < 0) continue;
    const int gpu = position_of.at(d.gpu_index);
    Unit& u = units[{gpu, d.gpu_instance_id, d.compute_instance_id}];
    u.gpu = gpu;
    u.gpu_index = d.gpu_index;
    u.gpu_instance_id = d.gpu_instance_id;
    u.compute_instance_id = d.compute_instance_id;
    auto it = state.find(&d);
    const State s = it == state.end() ? kAllocated : it->second;
    if (s == kFree) {
      u.free.push_back(&d);
    } else {
      ++u.load;
      if (s == kMust) ++u.must;
    }
  }
  for (auto& [key, u] : units) {
    if (u.free.empty() && u.must == 0) continue;
    std::sort(u.free.begin(), u.free.end(), PickOrder);
    model.units.push_back(std::move(u));
  }
  return model;
}

}  // namespace gpulet::allocation
