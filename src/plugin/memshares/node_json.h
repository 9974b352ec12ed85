// Reading fields of Kubernetes objects as the node agent needs them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace gpulet::nodeagent {

// The value of `key` in the object's metadata.annotations, when it is a
// string.
inline std::optional<std::string> Annotation(const nlohmann::json& object,
                                             std::string_view key) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return std::nullopt;
  auto annotations = metadata->find("annotations");
  if (annotations == metadata->end() || !annotations->is_object()) {
    return std::nullopt;
  }
  auto value = annotations->find(std::string(key));
  if (value == annotations->end() || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

// object[a][b] when it is a string, else "".
inline std::string StringAt(const nlohmann::json& object, const char* a,
                            const char* b) {
  auto outer = object.find(a);
  if (outer == object.end() || !outer->is_object()) return "";
  auto inner = outer->find(b);
  if (inner == outer->end() || !inner->is_string()) return "";
  return inner->get<std::string>();
}

}  // namespace gpulet::nodeagent
