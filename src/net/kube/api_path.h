// Request paths for the API server: escaped query strings and the paths of
// the objects gpulet reads and writes (its Node, pods on the node, pod
// bindings). Object names are checked against Kubernetes' naming rules
// (DNS-1123 subdomain) before they become part of a path, so no name can
// reach another resource.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpulet::kube {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// Percent-encodes everything but RFC 3986's unreserved characters.
std::string EscapeQueryValue(absl::string_view value);

// `path` followed by "?k=v&..." for the parameters with a non-empty value;
// `path` unchanged when there are none.
std::string WithQuery(absl::string_view path, const QueryParams& params);

// InvalidArgument unless `name` is a DNS-1123 subdomain (lowercase
// alphanumerics, '-' and '.', at most 253 characters, alphanumeric at
// both ends). `kind` names it in the message ("node name").
absl::Status ValidateName(absl::string_view kind, absl::string_view name);

// /api/v1/nodes/<name>
absl::StatusOr<std::string> NodePath(absl::string_view name);
// /api/v1/pods (every namespace) or /api/v1/namespaces/<ns>/pods
absl::StatusOr<std::string> PodsPath(absl::string_view ns = "");
// /api/v1/namespaces/<ns>/pods/<name>
absl::StatusOr<std::string> PodPath(absl::string_view ns,
                                    absl::string_view name);
// /api/v1/namespaces/<ns>/pods/<name>/binding
absl::StatusOr<std::string> PodBindingPath(absl::string_view ns,
                                           absl::string_view name);
// The field selector for the pods scheduled to `node`.
std::string PodsOnNodeSelector(absl::string_view node);

}  // namespace gpulet::kube
