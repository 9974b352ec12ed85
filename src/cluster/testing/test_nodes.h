// Node and Pod objects for the extender's tests: a Node carrying the two
// memory-share annotations, a Pod requesting GPU-memory units. Test-only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "src/model/sharing/annotations.h"

namespace gpulet::extender::testing {

inline constexpr char kResource[] = "nvidia.com/gpu-memory";

// GPUs given as {units, used}, healthy, UUIDs GPU-<node>-<i>.
inline sharing::NodeMemory Memory(const std::string& node,
                                  std::vector<std::pair<int64_t, int64_t>> gpus,
                                  int64_t unit_mib = 1024) {
  sharing::NodeMemory m;
  m.resource = kResource;
  m.unit_mib = unit_mib;
  m.observed = absl::FromUnixSeconds(1795496400);
  for (size_t i = 0; i < gpus.size(); ++i) {
    sharing::GpuSpace g;
    g.uuid = "GPU-" + node + "-" + std::to_string(i);
    g.index = static_cast<int>(i);
    g.units = gpus[i].first;
    g.used = gpus[i].second;
    m.gpus.push_back(g);
  }
  return m;
}

inline sharing::PendingPod PendingEntry(const std::string& uid,
                                        std::vector<int64_t> units) {
  sharing::PendingPod p;
  p.uid = uid;
  p.ns = "default";
  p.name = "pending-" + uid;
  p.time = absl::FromUnixSeconds(1795496000);
  for (size_t i = 0; i < units.size(); ++i) {
    p.containers.push_back({"c" + std::to_string(i), units[i]});
  }
  return p;
}

inline nlohmann::json NodeObject(const std::string& name,
                                 const sharing::NodeMemory* memory,
                                 const sharing::Pending* pending = nullptr,
                                 const std::string& rv = "100") {
  nlohmann::json annotations = nlohmann::json::object();
  if (memory != nullptr) {
    annotations[std::string(sharing::kNodeAnnotation)] =
        sharing::EncodeNodeMemory(*memory);
  }
  if (pending != nullptr) {
    annotations[std::string(sharing::kPendingAnnotation)] =
        sharing::EncodePending(*pending);
  }
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"resourceVersion", rv},
            {"annotations", annotations}}}};
}

// A pod whose containers ask for `units` each (0: no request).
inline nlohmann::json PodObject(const std::string& name,
                                std::vector<int64_t> units,
                                const std::string& policy = "") {
  nlohmann::json containers = nlohmann::json::array();
  for (size_t i = 0; i < units.size(); ++i) {
    nlohmann::json c = {{"name", "c" + std::to_string(i)}, {"image", "x"}};
    if (units[i] > 0) {
      c["resources"] = {{"limits", {{kResource, std::to_string(units[i])}}},
                        {"requests", {{kResource, std::to_string(units[i])}}}};
    }
    containers.push_back(c);
  }
  nlohmann::json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}},
      {"spec", {{"containers", containers}}}};
  if (!policy.empty()) {
    pod["metadata"]["annotations"] = {{"gpulet.dev/gpu-memory-policy", policy}};
  }
  return pod;
}

}  // namespace gpulet::extender::testing
