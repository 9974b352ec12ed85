// BestSet: the exact maximum-score set of full GPUs for one preferred
// allocation request, by branch and bound over subsets (see
// docs/allocation.md for the bound and the measured cost).
//
// Ties on score are broken deterministically: first the set whose remainder
// (available minus the set) has the best pair — so the next multi-GPU
// request still finds a well-connected pair — then the lexicographically
// smallest sorted set of positions.
//
// Thread safety: pure function.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "src/model/allocation/score.h"

namespace gpulet::allocation {

// Positions in `m` (0 .. m.size()-1). Returns `size` distinct positions,
// sorted ascending, from `available`, containing every `must_include`, with
// maximum SetScore. INVALID_ARGUMENT naming the field or position when:
// size < 1, size > available, a position out of range, a duplicate in
// either list, a must_include position not available, or more must_include
// positions than size.
absl::StatusOr<std::vector<int>> BestSet(const ScoreMatrix& m,
                                         const std::vector<int>& available,
                                         const std::vector<int>& must_include,
                                         int size);

}  // namespace gpulet::allocation
