#include "src/model/allocation/gpu_selector.h"

#include <algorithm>
#include <functional>
#include <tuple>

namespace gpulet::allocation {
namespace {

// C(n, k), saturating at `limit`.
long Choose(int n, int k, long limit) {
  long c = 1;
  for (int i = 1; i <= k; ++i) {
    c = c * (n - k + i) / i;
    if (c > limit) return limit + 1;
  }
  return c;
}

// Exhaustive search for the best `left`-subset of `cand` (ascending
// positions) reaching `need_new` capacity, in the documented order.
class Search {
 public:
  Search(const ScoreMatrix& m, const std::vector<int>& capacity,
         const std::vector<int>& fixed, std::vector<int> cand, int need_new)
      : m_(m), capacity_(capacity), cand_(std::move(cand)), need_(need_new) {
    gain_.assign(cand_.size(), 0);
    for (size_t j = 0; j < cand_.size(); ++j) {
      for (int f : fixed) gain_[j] += m_(cand_[j], f);
    }
    std::vector<int> caps;
    for (int c : cand_) caps.push_back(capacity_[c]);
    std::sort(caps.begin(), caps.end(), std::greater<>());
    top_caps_.assign(caps.size() + 1, 0);
    for (size_t t = 0; t < caps.size(); ++t) {
      top_caps_[t + 1] = top_caps_[t] + caps[t];
    }
  }

  std::vector<int> Run(int left) {
    Dfs(0, left, 0, 0);
    return best_;
  }

 private:
  void Dfs(size_t i, int left, int cap, int64_t score) {
    if (left == 0) {
      if (cap < need_) return;
      // Include-first over ascending positions meets sets in lexicographic
      // order, so only a strictly better (score, -capacity) replaces.
      if (found_ &&
          (score < best_score_ || (score == best_score_ && cap >= best_cap_))) {
        return;
      }
      found_ = true;
      best_score_ = score;
      best_cap_ = cap;
      best_ = chosen_;
      return;
    }
    if (cand_.size() - i < static_cast<size_t>(left)) return;
    if (cap + top_caps_[left] < need_) return;
    const int c = cand_[i];
    for (size_t j = i + 1; j < cand_.size(); ++j) gain_[j] += m_(c, cand_[j]);
    chosen_.push_back(c);
    Dfs(i + 1, left - 1, cap + capacity_[c], score + gain_[i]);
    chosen_.pop_back();
    for (size_t j = i + 1; j < cand_.size(); ++j) gain_[j] -= m_(c, cand_[j]);
    Dfs(i + 1, left, cap, score);
  }

  const ScoreMatrix& m_;
  const std::vector<int>& capacity_;
  const std::vector<int> cand_;
  const int need_;
  std::vector<int64_t> gain_;  // score candidate j adds to fixed + chosen
  std::vector<int> top_caps_;  // prefix sums of capacities, largest first
  std::vector<int> chosen_;
  std::vector<int> best_;
  bool found_ = false;
  int64_t best_score_ = 0;
  int best_cap_ = 0;
};

// Beyond kMaxSubsets: add the GPU with the best (gain, capacity) until the
// capacity suffices.
std::vector<int> Greedy(const ScoreMatrix& m, const std::vector<int>& capacity,
                        const std::vector<int>& fixed, std::vector<int> cand,
                        int need_new) {
  std::vector<int> in = fixed, chosen;
  int cap = 0;
  while (cap < need_new) {
    auto key = [&](int c) {
      int64_t gain = 0;
      for (int s : in) gain += m(c, s);
      return std::make_tuple(gain, capacity[c], -c);
    };
    auto best = std::max_element(cand.begin(), cand.end(),
                                 [&](int a, int b) { return key(a) < key(b); });
    cap += capacity[*best];
    in.push_back(*best);
    chosen.push_back(*best);
    cand.erase(best);
  }
  return chosen;
}

void AppendFills(const std::vector<int>& capacity, std::vector<int> gpus,
                 int& remaining, std::vector<GpuTake>& out) {
  std::sort(gpus.begin(), gpus.end(), [&](int a, int b) {
    return std::tie(capacity[a], a) < std::tie(capacity[b], b);
  });
  for (int g : gpus) {
    const int take = std::min(capacity[g], remaining);
    if (take <= 0) continue;
    out.push_back({g, take});
    remaining -= take;
  }
}

}  // namespace

std::vector<GpuTake> SelectGpus(const ScoreMatrix& m,
                                const std::vector<int>& capacity,
                                const std::vector<int>& fixed, int need) {
  std::vector<bool> is_fixed(m.size(), false);
  int fixed_cap = 0;
  for (int f : fixed) {
    if (!is_fixed[f]) fixed_cap += capacity[f];
    is_fixed[f] = true;
  }
  // Callers may list a GPU once per must_include device on it.
  std::vector<int> fixed_unique;
  for (int g = 0; g < m.size(); ++g) {
    if (is_fixed[g]) fixed_unique.push_back(g);
  }
  std::vector<int> chosen;
  if (fixed_cap < need) {
    const int need_new = need - fixed_cap;
    std::vector<int> cand;
    std::vector<int> caps;
    for (int g = 0; g < m.size(); ++g) {
      if (!is_fixed[g] && capacity[g] > 0) {
        cand.push_back(g);
        caps.push_back(capacity[g]);
      }
    }
    std::sort(caps.begin(), caps.end(), std::greater<>());
    int count = 0;
    int got = 0;
    while (got < need_new) got += caps[count++];
    const int n = static_cast<int>(cand.size());
    chosen = Choose(n, count, kMaxSubsets) <= kMaxSubsets
                 ? Search(m, capacity, fixed_unique, std::move(cand), need_new)
                       .Run(count)
                 : Greedy(m, capacity, fixed_unique, std::move(cand), need_new);
  }
  std::vector<GpuTake> out;
  int remaining = need;
  AppendFills(capacity, fixed_unique, remaining, out);
  AppendFills(capacity, chosen, remaining, out);
  return out;
}

std::vector<const pluginapi::Device*> PickMig(const UnitModel& model) {
  const ScoreMatrix& m = *model.matrix;
  std::vector<int> capacity(m.size(), 0);
  std::vector<int> fixed;
  for (const Unit& u : model.units) {
    capacity[u.gpu] += static_cast<int>(u.free.size());
    if (u.must > 0) fixed.push_back(u.gpu);
  }
  std::vector<const pluginapi::Device*> out;
  for (const GpuTake& t : SelectGpus(m, capacity, fixed, model.needed)) {
    int left = t.count;
    // Units are ordered by (gpu, GPU instance, compute instance).
    for (const Unit& u : model.units) {
      if (u.gpu != t.gpu) continue;
      for (const pluginapi::Device* d : u.free) {
        if (left == 0) break;
        out.push_back(d);
        --left;
      }
    }
  }
  return out;
}

}  // namespace gpulet::allocation
