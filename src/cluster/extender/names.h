// Kubernetes' own rules for the names a scheduler extender request
// carries, so that a request naming something the API server could never
// hold is refused before any work: pod and node names are DNS-1123
// subdomains (at most 253 characters, lowercase alphanumeric labels with
// inner '-', joined by '.'), namespaces and container names DNS-1123
// labels (at most 63, no '.'), as k8s.io/apimachinery validates them.
// UIDs are bounded in length only.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gpulet::extender {

inline constexpr size_t kMaxUidBytes = 128;

bool IsDns1123Label(absl::string_view name);
bool IsDns1123Subdomain(absl::string_view name);

// InvalidArgument "<field>: \"<name>\" is not a valid <rule>" (the name
// shortened and escaped) unless `name` follows the rule.
absl::Status CheckSubdomain(absl::string_view field, absl::string_view name);
absl::Status CheckLabel(absl::string_view field, absl::string_view name);
// A UID: 1..kMaxUidBytes printable ASCII characters.
absl::Status CheckUid(absl::string_view field, absl::string_view uid);

}  // namespace gpulet::extender
