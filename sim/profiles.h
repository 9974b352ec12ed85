// Built-in machine profiles (profiles/*.yaml, compiled into the library) and
// LoadMachine, which resolves a user's machine spec (a profile name or a
// path to a machine file) to a parsed sim::Machine.
//
// Built-ins: a100-mig, a100-mig-single, dgx-a100, dgx-h100 (the default),
// islands-16, no-driver, none, pcie-t4. Thread-safe: the embedded profile
// data is immutable; LoadMachine reads files but keeps no state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/machine.h"

namespace gpulet::sim {

// The profile used when no machine is named.
inline constexpr char kDefaultProfile[] = "dgx-h100";

// Names of the built-in profiles, sorted.
std::vector<std::string> ProfileNames();

// The YAML text of a built-in profile; nullopt if there is none by `name`.
std::optional<absl::string_view> ProfileYaml(const std::string& name);

// `spec` is a built-in profile name, or a path to a machine file when it
// contains '/' or ends in .yaml/.yml; empty means kDefaultProfile. Errors:
// NotFound `unknown machine profile "x" (built-in: ...)`; the file's read
// error naming its path; InvalidArgument from ParseMachine.
absl::StatusOr<Machine> LoadMachine(const std::string& spec);

}  // namespace gpulet::sim
