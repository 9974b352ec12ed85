// Pack: first-fit-decreasing, then a depth-first search over the requests
// in decreasing size. Two prunings keep the search small: GPUs with equal
// free space are interchangeable for the requests left, so only one of
// them is tried at each step; and a branch stops when the requests left
// need more units than the GPUs that could hold even the smallest of them.
#include "src/model/sharing/pack.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gpulet::sharing {
namespace {

class Search {
 public:
  Search(std::vector<int64_t> free_units, std::vector<int64_t> sizes,
         int64_t budget)
      : free_(std::move(free_units)),
        sizes_(std::move(sizes)),
        gpu_of_(sizes_.size(), -1),
        budget_(budget) {
    suffix_.assign(sizes_.size() + 1, 0);
    for (size_t k = sizes_.size(); k > 0; --k) {
      suffix_[k - 1] = suffix_[k] + sizes_[k - 1];
    }
  }

  bool FirstFit() {
    std::vector<int64_t> left = free_;
    for (size_t k = 0; k < sizes_.size(); ++k) {
      auto it = std::find_if(left.begin(), left.end(),
                             [&](int64_t f) { return f >= sizes_[k]; });
      if (it == left.end()) return false;
      *it -= sizes_[k];
      gpu_of_[k] = static_cast<int>(it - left.begin());
    }
    return true;
  }

  bool Run() { return Visit(0); }
  bool exhausted() const { return exhausted_; }
  const std::vector<int>& gpu_of() const { return gpu_of_; }

 private:
  bool Visit(size_t k) {
    if (k == sizes_.size()) return true;
    if (++visited_ > budget_) {
      exhausted_ = true;
      return false;
    }
    const int64_t smallest = sizes_.back();
    int64_t usable = 0;
    for (int64_t f : free_) {
      if (f >= smallest) usable += f;
    }
    if (usable < suffix_[k]) return false;
    // Best fit first: the GPU with the least room that still takes it.
    std::vector<int> tries;
    for (size_t g = 0; g < free_.size(); ++g) {
      if (free_[g] < sizes_[k]) continue;
      bool same = std::any_of(tries.begin(), tries.end(),
                              [&](int t) { return free_[t] == free_[g]; });
      if (!same) tries.push_back(static_cast<int>(g));
    }
    std::sort(tries.begin(), tries.end(), [&](int a, int b) {
      return free_[a] != free_[b] ? free_[a] < free_[b] : a < b;
    });
    for (int g : tries) {
      free_[g] -= sizes_[k];
      gpu_of_[k] = g;
      if (Visit(k + 1)) return true;
      free_[g] += sizes_[k];
      if (exhausted_) return false;
    }
    return false;
  }

  std::vector<int64_t> free_;
  std::vector<int64_t> sizes_;  // decreasing
  std::vector<int64_t> suffix_;
  std::vector<int> gpu_of_;
  int64_t budget_;
  int64_t visited_ = 0;
  bool exhausted_ = false;
};

}  // namespace

int64_t FreeUnits(const GpuSpace& gpu) {
  if (!gpu.healthy || gpu.used >= gpu.units) return 0;
  return gpu.units - gpu.used;
}

absl::StatusOr<std::vector<int>> Pack(std::span<const GpuSpace> gpus,
                                      std::span<const Request> reqs,
                                      PackOptions opts) {
  for (const Request& r : reqs) {
    if (r.units < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "request ", r.key, ": units must be at least 1, got ", r.units));
    }
  }
  std::vector<size_t> order(reqs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return reqs[a].units > reqs[b].units;
  });
  std::vector<int64_t> sizes;
  sizes.reserve(order.size());
  for (size_t i : order) sizes.push_back(reqs[i].units);
  std::vector<int64_t> free_units;
  free_units.reserve(gpus.size());
  for (const GpuSpace& g : gpus) free_units.push_back(FreeUnits(g));

  Search search(std::move(free_units), std::move(sizes), opts.budget);
  if (!search.FirstFit() && !search.Run()) {
    if (search.exhausted()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("packing ", reqs.size(), " requests onto ", gpus.size(),
                       " GPUs ran past the search budget of ", opts.budget,
                       " steps; counted as not fitting"));
    }
    return absl::NotFoundError(
        absl::StrCat(reqs.size(), " requests do not fit the free space of ",
                     gpus.size(), " GPUs"));
  }
  std::vector<int> out(reqs.size(), -1);
  for (size_t k = 0; k < order.size(); ++k) {
    out[order[k]] = search.gpu_of()[k];
  }
  return out;
}

absl::StatusOr<Choice> ChooseGpu(std::span<const GpuSpace> gpus,
                                 std::span<const Request> pending,
                                 int64_t units, Policy policy,
                                 PackOptions opts) {
  if (units < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("units must be at least 1, got ", units));
  }
  std::vector<Request> rest(pending.begin(), pending.end());
  Choice choice;
  auto same = std::find_if(rest.begin(), rest.end(),
                           [&](const Request& r) { return r.units == units; });
  if (same != rest.end()) {
    rest.erase(same);
    choice.matched_pending = true;
  }
  std::vector<int> room, keeps;
  std::vector<GpuSpace> after(gpus.begin(), gpus.end());
  for (size_t g = 0; g < gpus.size(); ++g) {
    if (FreeUnits(gpus[g]) < units) continue;
    room.push_back(static_cast<int>(g));
    after[g].used += units;
    if (Pack(after, rest, opts).ok()) keeps.push_back(static_cast<int>(g));
    after[g].used -= units;
  }
  if (room.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no GPU has ", units, " free memory units"));
  }
  choice.pending_fits = !keeps.empty();
  const std::vector<int>& from = keeps.empty() ? room : keeps;
  choice.gpu = *std::min_element(from.begin(), from.end(), [&](int a, int b) {
    int64_t fa = FreeUnits(gpus[a]), fb = FreeUnits(gpus[b]);
    if (fa != fb) return policy == Policy::kBinpack ? fa < fb : fa > fb;
    return a < b;
  });
  return choice;
}

}  // namespace gpulet::sharing
