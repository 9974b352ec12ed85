// CLI11 validators for numeric flags whose messages state the allowed range
// as a user would write it ("a whole number from 1 to 3600"), where CLI11's
// own Range and PositiveNumber print the bounds of the C++ type (a
// 310-digit double for "positive").
//
// Thread safety: the validators are values; each call only reads its input.
#pragma once

#include <cstdint>

#include "CLI/Error.hpp"
#include "CLI/Validators.hpp"

namespace gpulet::cli {

// A whole number (decimal, optional sign) of at least `min`. Named
// "POSITIVE" in help when `min` is 1, else ">=<min>".
CLI::Validator WholeNumberAtLeast(int64_t min);

// A whole number from `min` to `max`, both included; named "<min>..<max>".
CLI::Validator WholeNumberIn(int64_t min, int64_t max);

// A decimal number from `min` to `max`, both included; named
// "<min>..<max>" with the bounds in their shortest form ("1..10000").
CLI::Validator NumberIn(double min, double max);

}  // namespace gpulet::cli
