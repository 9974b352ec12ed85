// ParseMachine: turns a machine file (YAML, format in docs/machine-file.md)
// into a sim::Machine with every field filled, or rejects it with an error
// "<source>:<line>:<col>: <key path>: <what>" naming the first problem:
// syntax errors, unknown keys, wrong types, missing required keys, duplicate
// or malformed UUIDs / bus IDs / minors, inconsistent topology, NVLinks and
// MIG layouts, absurd sizes.
//
// Parsing only: reading files and built-in profiles is profiles.h. Never
// throws (yaml-cpp's exceptions are caught inside). Thread-safe: no state.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "sim/machine.h"

namespace gpulet::sim {

// Machine files larger than this are rejected before parsing.
inline constexpr size_t kMaxMachineFileBytes = size_t{1} << 20;

// Parses a machine description. `source` (a file path or "profile:<name>")
// prefixes every error and is stored in Machine::source. Errors are
// InvalidArgument.
absl::StatusOr<Machine> ParseMachine(const std::string& yaml,
                                     const std::string& source);

}  // namespace gpulet::sim
