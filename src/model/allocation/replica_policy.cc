#include "src/model/allocation/replica_policy.h"

#include <algorithm>
#include <climits>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "src/model/allocation/best_set.h"
#include "src/model/allocation/gpu_selector.h"

namespace gpulet::allocation {
namespace {

int Cap(const Unit& u) { return static_cast<int>(u.free.size()); }

// Replicas needed to bring every unit to `level` (capped by what it has).
int Fill(const std::vector<Unit>& units, int level) {
  int total = 0;
  for (const Unit& u : units) {
    total += std::min(Cap(u), std::max(0, level - u.load));
  }
  return total;
}

// Full-GPU units: extras on untouched GPUs first, by BestSet.
std::vector<int> SpreadExtras(const ScoreMatrix& m,
                              const std::vector<Unit>& units,
                              const WaterFill& w) {
  std::vector<int> touched_pos, cand_pos;
  absl::flat_hash_map<int, int> unit_at;
  for (size_t i = 0; i < units.size(); ++i) {
    unit_at[units[i].gpu] = static_cast<int>(i);
    if (w.take[i] > 0 || units[i].must > 0) touched_pos.push_back(units[i].gpu);
  }
  std::vector<int> fresh, old;
  for (int i : w.eligible) {
    (w.take[i] > 0 || units[i].must > 0 ? old : fresh).push_back(i);
  }
  std::vector<int> extras;
  if (static_cast<int>(fresh.size()) >= w.extras) {
    cand_pos = touched_pos;
    for (int i : fresh) cand_pos.push_back(units[i].gpu);
    const int size = static_cast<int>(touched_pos.size()) + w.extras;
    // Valid by construction: positions distinct, touched within available.
    std::vector<int> best = *BestSet(m, cand_pos, touched_pos, size);
    for (int p : best) {
      const int i = unit_at[p];
      if (w.take[i] == 0 && units[i].must == 0) extras.push_back(i);
    }
    return extras;
  }
  extras = fresh;
  std::sort(old.begin(), old.end(), [&](int a, int b) {
    return std::make_tuple(w.take[a] + units[a].must, units[a].gpu) <
           std::make_tuple(w.take[b] + units[b].must, units[b].gpu);
  });
  old.resize(w.extras - fresh.size());
  extras.insert(extras.end(), old.begin(), old.end());
  return extras;
}

// MIG units: extras where SelectGpus puts them, within a GPU on the units
// this request touches least.
std::vector<int> GroupedExtras(const ScoreMatrix& m,
                               const std::vector<Unit>& units,
                               const WaterFill& w) {
  std::vector<int> capacity(m.size(), 0);
  std::vector<int> fixed;
  for (size_t i = 0; i < units.size(); ++i) {
    if (w.take[i] > 0 || units[i].must > 0) fixed.push_back(units[i].gpu);
  }
  for (int i : w.eligible) ++capacity[units[i].gpu];
  std::vector<int> extras;
  for (const GpuTake& t : SelectGpus(m, capacity, fixed, w.extras)) {
    std::vector<int> on_gpu;
    for (int i : w.eligible) {
      if (units[i].gpu == t.gpu) on_gpu.push_back(i);
    }
    std::stable_sort(on_gpu.begin(), on_gpu.end(), [&](int a, int b) {
      return w.take[a] + units[a].must < w.take[b] + units[b].must;
    });
    extras.insert(extras.end(), on_gpu.begin(), on_gpu.begin() + t.count);
  }
  return extras;
}

std::vector<const pluginapi::Device*> Distributed(const UnitModel& model,
                                                  bool units_share_gpus) {
  const std::vector<Unit>& units = model.units;
  WaterFill w = FillToLevel(units, model.needed);
  if (w.extras > 0) {
    std::vector<int> extras = units_share_gpus
                                  ? GroupedExtras(*model.matrix, units, w)
                                  : SpreadExtras(*model.matrix, units, w);
    for (int i : extras) ++w.take[i];
  }
  std::vector<const pluginapi::Device*> out;
  for (size_t i = 0; i < units.size(); ++i) {
    for (int k = 0; k < w.take[i]; ++k) out.push_back(units[i].free[k]);
  }
  return out;
}

std::vector<const pluginapi::Device*> Packed(const UnitModel& model) {
  const std::vector<Unit>& units = model.units;
  const ScoreMatrix& m = *model.matrix;
  std::vector<bool> in_answer(m.size(), false), drained(units.size(), false);
  std::vector<int> answer_gpus;
  auto add_gpu = [&](int g) {
    if (!in_answer[g]) answer_gpus.push_back(g);
    in_answer[g] = true;
  };
  for (const Unit& u : units) {
    if (u.must > 0) add_gpu(u.gpu);
  }
  std::vector<const pluginapi::Device*> out;
  int remaining = model.needed;
  while (remaining > 0) {
    auto key = [&](size_t i) {
      const Unit& u = units[i];
      int64_t gain = 0;
      for (int g : answer_gpus) {
        if (g != u.gpu) gain += m(u.gpu, g);
      }
      return std::make_tuple(u.load, in_answer[u.gpu], Cap(u) >= remaining,
                             gain, Cap(u), -static_cast<int>(i));
    };
    size_t best = units.size();
    for (size_t i = 0; i < units.size(); ++i) {
      if (drained[i] || units[i].free.empty()) continue;
      if (best == units.size() || key(best) < key(i)) best = i;
    }
    const Unit& u = units[best];
    const int take = std::min(Cap(u), remaining);
    out.insert(out.end(), u.free.begin(), u.free.begin() + take);
    remaining -= take;
    drained[best] = true;
    add_gpu(u.gpu);
  }
  return out;
}

}  // namespace

WaterFill FillToLevel(const std::vector<Unit>& units, int needed) {
  WaterFill w;
  w.take.assign(units.size(), 0);
  if (needed <= 0) return w;
  int level = INT_MAX, top = 0;
  for (const Unit& u : units) {
    if (u.free.empty()) continue;
    level = std::min(level, u.load);
    top = std::max(top, u.load + Cap(u));
  }
  while (level < top && Fill(units, level + 1) <= needed) ++level;
  int forced = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const Unit& u = units[i];
    w.take[i] = std::min(Cap(u), std::max(0, level - u.load));
    forced += w.take[i];
    if (u.load <= level && u.load + Cap(u) > level) {
      w.eligible.push_back(static_cast<int>(i));
    }
  }
  w.level = level;
  w.extras = needed - forced;
  return w;
}

std::vector<const pluginapi::Device*> PickReplicas(const UnitModel& model,
                                                   SharedPolicy policy,
                                                   bool units_share_gpus) {
  if (policy == SharedPolicy::kPacked) return Packed(model);
  return Distributed(model, units_share_gpus);
}

}  // namespace gpulet::allocation
