// The node labels as node-feature-discovery's NodeFeature object
// (nfd.k8s-sigs.io/v1alpha1), as gpu-feature-discovery writes it since
// v0.19: one object per node, in the labelling component's namespace, named
// "nvidia-features-for-<node>", carrying the label
// "nfd.node.kubernetes.io/node-name: <node>" by which NFD's master finds the
// node, and the labels in spec.labels; NFD's master puts them on the Node.
// Values only: the object to create, the change that brings an existing
// object to the computed labels, and whether an API group's resource list
// (discovery) has nodefeatures.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "src/model/labels/labels.h"

namespace gpulet::labels {

// The group version's discovery document, and the API version of the kind.
inline constexpr char kNodeFeatureGroupVersionPath[] =
    "/apis/nfd.k8s-sigs.io/v1alpha1";
inline constexpr char kNodeFeatureApiVersion[] = "nfd.k8s-sigs.io/v1alpha1";
inline constexpr char kNodeFeatureResource[] = "nodefeatures";
inline constexpr char kNodeFeatureNodeNameLabel[] =
    "nfd.node.kubernetes.io/node-name";
inline constexpr char kNodeFeatureNamePrefix[] = "nvidia-features-for-";

// "nvidia-features-for-<node>"; InvalidArgument naming the node when that
// is not a valid object name or the node name not a valid label value.
absl::StatusOr<std::string> NodeFeatureName(absl::string_view node);

// /apis/nfd.k8s-sigs.io/v1alpha1/namespaces/<ns>/nodefeatures, and
// .../<name> when `name` is not empty; InvalidArgument for a bad name.
absl::StatusOr<std::string> NodeFeaturePath(absl::string_view ns,
                                            absl::string_view name = "");

// The object to create for `node` in `ns` carrying `labels`. REQUIRES:
// NodeFeatureName(node) succeeds.
nlohmann::json NewNodeFeature(absl::string_view ns, absl::string_view node,
                              const Labels& labels);

// `current` (as read, resourceVersion included) with spec.labels replaced by
// `labels` and the node-name label set to `node`; everything else kept.
// nullopt when `current` already is that.
std::optional<nlohmann::json> UpdatedNodeFeature(const nlohmann::json& current,
                                                 absl::string_view node,
                                                 const Labels& labels);

// Whether an APIResourceList (the group version's discovery document)
// lists the nodefeatures resource.
bool ListsNodeFeatures(const nlohmann::json& resource_list);

}  // namespace gpulet::labels
