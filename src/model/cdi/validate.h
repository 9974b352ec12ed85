// CDI name rules, the minimum cdiVersion a spec needs, and whole-spec
// validation, following the CDI reference library
// (tags.cncf.io/container-device-interface: pkg/parser, specs-go/version.go,
// pkg/cdi/spec.go) so that a spec gpulet accepts is one the runtimes accept.
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/model/cdi/spec.h"

namespace gpulet::cdi {

// Known spec versions, oldest first ("0.3.0" .. "1.1.0"; 0.1.0 and 0.2.0 are
// known but below every feature gate).
inline constexpr const char* kKnownVersions[] = {
    "0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0",
    "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"};

// Vendor and class: start with a letter, end with a letter or digit, middle
// letters, digits, '_', '.', '-'. Errors name the offending value.
absl::Status ValidateVendorName(const std::string& vendor);
absl::Status ValidateClassName(const std::string& cls);
// Device name: starts and ends with a letter or digit, middle letters,
// digits, '_', '.', ':', '-'.
absl::Status ValidateDeviceName(const std::string& name);

// "vendor/class=name".
std::string QualifiedName(const std::string& vendor, const std::string& cls,
                          const std::string& name);

struct ParsedName {
  std::string vendor;
  std::string cls;
  std::string name;
};
// Splits and checks "vendor/class=name"; InvalidArgument naming `qualified`.
absl::StatusOr<ParsedName> ParseQualifiedName(const std::string& qualified);

// The lowest cdiVersion whose features `spec` uses: 0.3.0 by default; 0.4.0
// for a mount type; 0.5.0 for a device name starting with a digit or a
// device node hostPath; 0.6.0 for annotations or a '.' in the class; 0.7.0
// for additionalGids. Ignores spec.cdi_version itself.
std::string MinimumVersion(const Spec& spec);

// -1, 0, 1 as `a` is older, equal, newer than `b`; unknown versions sort
// before every known one.
int CompareVersions(const std::string& a, const std::string& b);

// Everything the reference library checks when it loads a spec: a known
// cdiVersion (a leading 'v' allowed) not below MinimumVersion, kind
// "vendor/class" with valid names, at least one device, unique valid device
// names, non-empty device edits, "KEY=value" env entries, device node paths,
// types (b, c, u, p) and permissions (subset of rwm), hook names and paths,
// mount paths. Errors are InvalidArgument naming the device and field.
absl::Status Validate(const Spec& spec);

}  // namespace gpulet::cdi
