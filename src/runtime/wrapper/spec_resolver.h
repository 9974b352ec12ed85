// Finding CDI specs on disk and resolving qualified device names against
// them. Spec dirs are read in order (default /etc/cdi, then /var/run/cdi);
// files ending in .json, .yaml or .yml are read in name order, and a device
// defined again later (a later file or a later dir) replaces the earlier
// definition. A file that fails to parse does not stop other devices from
// resolving; its error is kept in LoadedSpecs::errors for the node's log.
//
// Resolution yields the edits to apply, in order: for every spec that a
// requested device comes from, the spec's own edits once, then each
// device's edits (the order of the CDI reference library).
//
// Thread safety: pure functions apart from LoadSpecDirs, which reads files.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/model/cdi/spec.h"
#include "src/runtime/wrapper/request.h"

namespace gpulet::runtime {

struct SpecFile {
  std::string path;
  cdi::Spec spec;
};

struct LoadedSpecs {
  std::vector<SpecFile> specs;      // in priority order, lowest first
  std::vector<std::string> errors;  // "<path>: <why>" for unusable files
};

// Parses one spec file's text; `path` is for error messages and for the
// format (".json" or YAML).
using SpecParser = std::function<absl::StatusOr<cdi::Spec>(
    const std::string& text, const std::string& path)>;

// The production parser: cdi::ParseSpec then cdi::Validate, errors naming
// `path`.
absl::StatusOr<cdi::Spec> ParseAndValidateSpec(const std::string& text,
                                               const std::string& path);

// Reads every spec in `dirs`. A missing dir is skipped; a dir that exists
// but cannot be read is an error naming it.
absl::StatusOr<LoadedSpecs> LoadSpecDirs(const std::vector<std::string>& dirs,
                                         const SpecParser& parser);

// The edits for `request`. `default_kind` ("nvidia.com/gpu") is the kind
// whose spec-level edits a driver-only request gets. NotFound names the
// unknown device and its kind only: the message reaches the pod's events,
// so it lists neither the other devices of the kind nor the spec files
// (`specs.errors` is for the node's log).
absl::StatusOr<std::vector<cdi::ContainerEdits>> ResolveEdits(
    const LoadedSpecs& specs, const GpuRequest& request,
    const std::string& default_kind);

}  // namespace gpulet::runtime
