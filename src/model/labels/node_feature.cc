#include "src/model/labels/node_feature.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/check.h"
#include "src/base/common/status_macros.h"
#include "src/net/kube/api_path.h"

namespace gpulet::labels {
namespace {

// A label value's limit (the node-name label carries the node's name).
constexpr size_t kMaxLabelValue = 63;

nlohmann::json LabelsJson(const Labels& labels) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : labels) out[key] = value;
  return out;
}

}  // namespace

absl::StatusOr<std::string> NodeFeatureName(absl::string_view node) {
  GPULET_RETURN_IF_ERROR(kube::ValidateName("node name", node));
  if (node.size() > kMaxLabelValue) {
    return absl::InvalidArgumentError(
        absl::StrCat("node name \"", node, "\" is longer than ", kMaxLabelValue,
                     " characters, the limit of the ",
                     kNodeFeatureNodeNameLabel, " label's value"));
  }
  std::string name = absl::StrCat(kNodeFeatureNamePrefix, node);
  GPULET_RETURN_IF_ERROR(kube::ValidateName("NodeFeature name", name));
  return name;
}

absl::StatusOr<std::string> NodeFeaturePath(absl::string_view ns,
                                            absl::string_view name) {
  GPULET_RETURN_IF_ERROR(kube::ValidateName("namespace", ns));
  std::string path = absl::StrCat(kNodeFeatureGroupVersionPath, "/namespaces/",
                                  ns, "/", kNodeFeatureResource);
  if (name.empty()) return path;
  GPULET_RETURN_IF_ERROR(kube::ValidateName("NodeFeature name", name));
  return absl::StrCat(path, "/", name);
}

nlohmann::json NewNodeFeature(absl::string_view ns, absl::string_view node,
                              const Labels& labels) {
  absl::StatusOr<std::string> name = NodeFeatureName(node);
  GPULET_CHECK(name.ok()) << name.status().message();
  // Empty feature sets, as gpu-feature-discovery sends them: the labels are
  // the whole message.
  nlohmann::json features = {{"attributes", nlohmann::json::object()},
                             {"flags", nlohmann::json::object()},
                             {"instances", nlohmann::json::object()}};
  return {
      {"apiVersion", kNodeFeatureApiVersion},
      {"kind", "NodeFeature"},
      {"metadata",
       {{"name", *name},
        {"namespace", std::string(ns)},
        {"labels", {{kNodeFeatureNodeNameLabel, std::string(node)}}}}},
      {"spec",
       {{"features", std::move(features)}, {"labels", LabelsJson(labels)}}}};
}

std::optional<nlohmann::json> UpdatedNodeFeature(const nlohmann::json& current,
                                                 absl::string_view node,
                                                 const Labels& labels) {
  nlohmann::json updated = current.is_object() ? current : nlohmann::json{};
  nlohmann::json& metadata = updated["metadata"];
  if (!metadata.is_object()) metadata = nlohmann::json::object();
  nlohmann::json& object_labels = metadata["labels"];
  if (!object_labels.is_object()) object_labels = nlohmann::json::object();
  object_labels[kNodeFeatureNodeNameLabel] = std::string(node);
  nlohmann::json& spec = updated["spec"];
  if (!spec.is_object()) spec = nlohmann::json::object();
  spec["labels"] = LabelsJson(labels);
  if (updated == current) return std::nullopt;
  return updated;
}

bool ListsNodeFeatures(const nlohmann::json& resource_list) {
  if (!resource_list.is_object()) return false;
  auto resources = resource_list.find("resources");
  if (resources == resource_list.end() || !resources->is_array()) return false;
  for (const nlohmann::json& r : *resources) {
    if (r.is_object() && r.value("name", "") == kNodeFeatureResource) {
      return true;
    }
  }
  return false;
}

}  // namespace gpulet::labels
