#include "src/model/labels/node_patch.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gpulet::labels {
namespace {

constexpr char kRemovablePrefix[] = "nvidia.com/";

// metadata.<field>.<key> of `node` as a string; nullopt when absent or not
// a string.
std::optional<std::string> MetadataString(const nlohmann::json& node,
                                          const char* field,
                                          const std::string& key) {
  if (!node.is_object()) return std::nullopt;
  auto metadata = node.find("metadata");
  if (metadata == node.end() || !metadata->is_object()) return std::nullopt;
  auto map = metadata->find(field);
  if (map == metadata->end() || !map->is_object()) return std::nullopt;
  auto value = map->find(key);
  if (value == map->end() || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

std::set<std::string> OwnedKeys(const nlohmann::json& node) {
  std::set<std::string> keys;
  std::optional<std::string> list =
      MetadataString(node, "annotations", kOwnedLabelsAnnotation);
  if (!list.has_value()) return keys;
  for (absl::string_view key : absl::StrSplit(*list, ',', absl::SkipEmpty())) {
    keys.emplace(key);
  }
  return keys;
}

}  // namespace

std::string FeatureFileText(const Labels& labels) {
  std::string text;
  for (const auto& [key, value] : labels) {
    absl::StrAppend(&text, key, "=", value, "\n");
  }
  return text;
}

std::optional<nlohmann::json> NodeLabelPatch(const nlohmann::json& node,
                                             const Labels& labels) {
  nlohmann::json patch_labels = nlohmann::json::object();
  for (const auto& [key, value] : labels) {
    if (MetadataString(node, "labels", key) != value) {
      patch_labels[key] = value;
    }
  }
  for (const std::string& key : OwnedKeys(node)) {
    if (labels.contains(key) || !absl::StartsWith(key, kRemovablePrefix)) {
      continue;
    }
    if (MetadataString(node, "labels", key).has_value()) {
      patch_labels[key] = nullptr;
    }
  }
  std::vector<std::string> keys;
  for (const auto& [key, value] : labels) keys.push_back(key);
  const std::string owned = absl::StrJoin(keys, ",");
  const bool annotation_current =
      MetadataString(node, "annotations", kOwnedLabelsAnnotation) == owned;
  if (patch_labels.empty() && annotation_current) return std::nullopt;
  nlohmann::json patch;
  patch["metadata"]["labels"] = patch_labels;
  patch["metadata"]["annotations"][kOwnedLabelsAnnotation] = owned;
  return patch;
}

}  // namespace gpulet::labels
