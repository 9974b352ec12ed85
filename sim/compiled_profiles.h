#pragma once

// The built-in machine profiles as C++ that builds their `Machine` values,
// generated at build time by sim_profile_compiler (profile_compiler.cc) from
// the same YAML files `LoadMachine` parses. The simulator library uses it so
// that nvmlInit on a built-in profile costs no YAML parsing (and no
// yaml-cpp work) at run time, as a driver's libnvidia-ml does none; machine
// files given by path are still parsed on every init, so edits to them take
// effect at the next nvmlInit. Pure; thread-safe.

#include <optional>
#include <string>

#include "sim/machine.h"

namespace gpulet::sim {

// The built-in profile `name` (exactly a name of ProfileNames(); no default
// for ""), equal to what LoadMachine(name) returns; nullopt for any other
// name.
std::optional<Machine> CompiledProfile(const std::string& name);

}  // namespace gpulet::sim
