// Kubernetes resource quantities ("4Gi", "1500M", "2e3", "0.5Gi") as a
// whole number, for the amounts a claim's allocation consumes
// (consumedCapacity). Pure; thread safety: pure functions.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpulet::dra {

// The quantity's value rounded up to a whole number, as Kubernetes'
// Quantity.Value() gives it: binary suffixes Ki..Ei, decimal ones k..E, a
// decimal exponent (e3), an optional fraction. InvalidArgument quoting
// `text` for anything else, a negative value, or one beyond 2^63 - 1.
absl::StatusOr<int64_t> ParseQuantity(absl::string_view text);

}  // namespace gpulet::dra
