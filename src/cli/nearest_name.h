// The name closest to a mistyped one, for "did you mean" hints.
//
// Thread safety: a pure function.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpulet::cli {

// The Levenshtein distance between `a` and `b` (insertions, deletions and
// substitutions of one byte each cost 1).
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate with the smallest edit distance to `typed` (the first of
// equals), when that distance is small enough to be a slip: at most 2, or
// at most half the length of `typed`. nullopt otherwise.
std::optional<std::string> NearestName(
    std::string_view typed, const std::vector<std::string>& candidates);

}  // namespace gpulet::cli
