// JsonMember: the member `key` of a JSON object as the Kubernetes API has
// it, where an absent member and a null one mean the same; the extender's
// readers of pods and nodes (binder.cc, node_eligibility.cc) share it.
//
// Thread safety: pure.
#pragma once

#include "nlohmann/json.hpp"

namespace gpulet::extender {

// The member `key` of `object`; nullptr when `object` is null or not an
// object, or the member is absent or null.
inline const nlohmann::json* JsonMember(const nlohmann::json* object,
                                        const char* key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(key);
  return it == object->end() || it->is_null() ? nullptr : &*it;
}

inline const nlohmann::json* JsonMember(const nlohmann::json& object,
                                        const char* key) {
  return JsonMember(&object, key);
}

}  // namespace gpulet::extender
