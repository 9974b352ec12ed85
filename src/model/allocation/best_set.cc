#include "src/model/allocation/best_set.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gpulet::allocation {
namespace {

absl::Status Validate(const ScoreMatrix& m, const std::vector<int>& available,
                      const std::vector<int>& must, int size) {
  auto bad = [](auto... parts) {
    return absl::InvalidArgumentError(absl::StrCat(parts...));
  };
  if (size < 1) return bad("size must be at least 1, got ", size);
  std::vector<bool> seen(m.size(), false);
  for (int p : available) {
    if (p < 0 || p >= m.size())
      return bad("available position out of range: ", p);
    if (seen[p]) return bad("duplicate available position: ", p);
    seen[p] = true;
  }
  if (static_cast<size_t>(size) > available.size()) {
    return bad("size ", size, " exceeds the ", available.size(),
               " available GPUs");
  }
  std::vector<bool> must_seen(m.size(), false);
  for (int p : must) {
    if (p < 0 || p >= m.size() || !seen[p]) {
      return bad("must_include position not available: ", p);
    }
    if (must_seen[p]) return bad("duplicate must_include position: ", p);
    must_seen[p] = true;
  }
  if (must.size() > static_cast<size_t>(size)) {
    return bad("must_include holds ", must.size(), " GPUs, more than size ",
               size);
  }
  return absl::OkStatus();
}

// Depth-first include/exclude search over the free candidates. gain_[j] is
// the score candidate j would add to the current set; the bound adds, for
// the best `left` candidates, their gain plus half of their `left - 1`
// heaviest edges to other candidates (each edge among new picks is shared
// by two picks), which never underestimates. Sets that only tie the best
// score are still explored, for the tie-break.
class Search {
 public:
  Search(const ScoreMatrix& m, std::vector<int> must, std::vector<int> cand)
      : m_(m), chosen_(std::move(must)), cand_(std::move(cand)) {
    const size_t c = cand_.size();
    gain_.assign(c, 0);
    picked_.assign(c, false);
    top_prefix_.assign(c, std::vector<int64_t>(c, 0));
    for (size_t j = 0; j < c; ++j) {
      for (int s : chosen_) gain_[j] += m_(cand_[j], s);
      std::vector<int64_t> w;
      for (size_t k = 0; k < c; ++k) {
        if (k != j) w.push_back(m_(cand_[j], cand_[k]));
      }
      std::sort(w.begin(), w.end(), std::greater<>());
      for (size_t t = 0; t < w.size(); ++t) {
        top_prefix_[j][t + 1] = top_prefix_[j][t] + w[t];
      }
    }
    current_ = SetScore(m_, chosen_);
    max_pair_ = std::numeric_limits<int64_t>::min();
    for (size_t a = 0; a < c; ++a) {
      for (size_t b = a + 1; b < c; ++b) {
        max_pair_ = std::max(max_pair_, m_(cand_[a], cand_[b]));
      }
    }
  }

  std::vector<int> Run(int left) {
    Dfs(0, left);
    std::sort(best_.begin(), best_.end());
    return best_;
  }

 private:
  void Dfs(size_t i, int left) {
    if (left == 0) return Leaf();
    if (cand_.size() - i < static_cast<size_t>(left)) return;
    if (!best_.empty()) {
      // Include-first over ascending candidates visits sets in
      // lexicographic order, so a later set that only ties on score needs
      // a strictly better remainder, which max_pair_ may rule out.
      const int64_t bound = Bound(i, left);
      if (bound < best_score_) return;
      if (bound == best_score_ && best_rest_ >= max_pair_) return;
    }
    const int c = cand_[i];
    current_ += gain_[i];
    for (size_t j = i + 1; j < cand_.size(); ++j) gain_[j] += m_(c, cand_[j]);
    chosen_.push_back(c);
    picked_[i] = true;
    Dfs(i + 1, left - 1);
    picked_[i] = false;
    chosen_.pop_back();
    for (size_t j = i + 1; j < cand_.size(); ++j) gain_[j] -= m_(c, cand_[j]);
    current_ -= gain_[i];
    Dfs(i + 1, left);
  }

  int64_t Bound(size_t i, int left) {
    scratch_.clear();
    for (size_t j = i; j < cand_.size(); ++j) {
      scratch_.push_back(2 * gain_[j] + top_prefix_[j][left - 1]);
    }
    std::nth_element(scratch_.begin(), scratch_.begin() + (left - 1),
                     scratch_.end(), std::greater<>());
    int64_t sum = 0;
    for (int t = 0; t < left; ++t) sum += scratch_[t];
    return current_ + sum / 2;
  }

  // Best pair score among candidates not in the current set.
  int64_t RemainderBestPair() const {
    int64_t best = std::numeric_limits<int64_t>::min();
    for (size_t a = 0; a < cand_.size(); ++a) {
      if (picked_[a]) continue;
      for (size_t b = a + 1; b < cand_.size(); ++b) {
        if (!picked_[b]) best = std::max(best, m_(cand_[a], cand_[b]));
      }
    }
    return best;
  }

  void Leaf() {
    if (!best_.empty() && current_ < best_score_) return;
    const int64_t rest = RemainderBestPair();
    std::vector<int> sorted = chosen_;
    std::sort(sorted.begin(), sorted.end());
    if (!best_.empty() && current_ == best_score_ &&
        (rest < best_rest_ || (rest == best_rest_ && sorted >= best_))) {
      return;
    }
    best_score_ = current_;
    best_rest_ = rest;
    best_ = std::move(sorted);
  }

  const ScoreMatrix& m_;
  std::vector<int> chosen_;
  const std::vector<int> cand_;
  std::vector<int64_t> gain_;
  std::vector<bool> picked_;
  // top_prefix_[j][t]: sum of candidate j's t heaviest edges to others.
  std::vector<std::vector<int64_t>> top_prefix_;
  std::vector<int64_t> scratch_;
  int64_t current_ = 0;
  std::vector<int> best_;
  int64_t best_score_ = 0;
  int64_t best_rest_ = 0;
  // Best pair among all candidates: no remainder can beat it.
  int64_t max_pair_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<int>> BestSet(const ScoreMatrix& m,
                                         const std::vector<int>& available,
                                         const std::vector<int>& must_include,
                                         int size) {
  if (absl::Status s = Validate(m, available, must_include, size); !s.ok()) {
    return s;
  }
  std::vector<bool> must(m.size(), false);
  for (int p : must_include) must[p] = true;
  std::vector<int> cand;
  for (int p : available) {
    if (!must[p]) cand.push_back(p);
  }
  std::sort(cand.begin(), cand.end());
  const int left = size - static_cast<int>(must_include.size());
  return Search(m, must_include, std::move(cand)).Run(left);
}

}  // namespace gpulet::allocation
