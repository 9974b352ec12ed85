// CDI spec files: where gpulet writes its spec (atomically, so a runtime
// scanning the directory never reads half a file) and how the runtime
// wrapper reads one back.
//
// Thread safety: functions touch only the named files; two processes writing
// the same spec file race benignly (last rename wins).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "src/gpu/device/gpu.h"
#include "src/model/cdi/driver.h"
#include "src/model/cdi/spec.h"
#include "src/model/cdi/spec_builder.h"
#include "src/model/cdi/spec_codec.h"

namespace gpulet::cdi {

// The directory runtimes read with the higher priority; gpulet writes here.
inline constexpr char kDynamicSpecDir[] = "/var/run/cdi";
// The lower-priority static directory.
inline constexpr char kStaticSpecDir[] = "/etc/cdi";

// The reference library's file name for a kind: "nvidia.com/gpu" ->
// "nvidia.com-gpu" plus ".yaml" or ".json".
std::string SpecFileName(const std::string& kind, Format format);

// Validates `spec`, creates `dir` (0755) if needed, writes
// <dir>/SpecFileName(kind, format) with common::WriteFileAtomic, and removes
// the same spec in the other format if one exists (runtimes would see the
// devices twice and reject both). Returns the path written.
absl::StatusOr<std::string> WriteSpecFile(const std::string& dir,
                                          const Spec& spec, Format format);

// DiscoverDriver (with `driver.version` defaulting to node.driver_version)
// then BuildSpec: what `gpulet cdi generate` and `gpulet plugin` call.
absl::StatusOr<Spec> GenerateSpec(const device::Node& node,
                                  DriverOptions driver,
                                  const BuildOptions& build = {});

// Reads, parses (ParseSpec) and validates (Validate) a spec file. Errors
// name the path.
absl::StatusOr<Spec> ReadSpecFile(const std::string& path);

}  // namespace gpulet::cdi
