// The create flow of gpulet-runtime: read <bundle>/config.json, find the
// GPUs it asks for, resolve them against the CDI specs, apply the edits and
// write config.json back atomically. With no request the file is not
// touched. On any error the file is not touched either, and the caller must
// not start the real runtime.
//
// Thread safety: one call at a time per bundle.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/runtime/wrapper/apply_edits.h"
#include "src/runtime/wrapper/runtime_config.h"
#include "src/runtime/wrapper/spec_resolver.h"

namespace gpulet::runtime {

struct PrepareOptions {
  config::RuntimeConfig config;
  SpecParser parser = ParseAndValidateSpec;
  HostDeviceLookup lookup = StatHostDevice;  // seam for unit tests
};

struct PrepareResult {
  bool modified = false;
  // Qualified names; "<kind> driver" for a driver-only request.
  std::vector<std::string> injected;
};

// `bundle_dir` is the bundle as runc would use it: relative paths are
// relative to the working directory; empty means the working directory.
absl::StatusOr<PrepareResult> PrepareBundle(const std::string& bundle_dir,
                                            const PrepareOptions& options);

}  // namespace gpulet::runtime
