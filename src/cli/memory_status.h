// MemoryStatus: what `kubectl gpulet status` shows for a node, computed from
// the node's two memory-share annotations (docs/sharing.md), and the two
// ways it is printed: a table for people and JSON for scripts.
//
// A node without gpulet.dev/gpu-memory has no memory shares; an annotation
// that does not parse makes the node's status an error naming the node and
// the annotation, never a crash. Pending pods (bound by the extender, not
// admitted by the kubelet yet) have no GPU yet, so they are counted per
// node. Pure functions of their arguments; thread safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace gpulet::cli {

// The annotations of one Node as read from the API server.
struct NodeAnnotations {
  std::string node;
  std::optional<std::string> memory;   // gpulet.dev/gpu-memory
  std::optional<std::string> pending;  // gpulet.dev/gpu-memory-pending
};

// Reads the name and the two annotations from a Node object.
NodeAnnotations AnnotationsOfNode(const nlohmann::json& node);

struct PodShare {
  std::string ns, name;
  int64_t units = 0;
};

struct GpuStatus {
  int index = 0;
  std::string uuid;
  bool healthy = true;
  int64_t units = 0, used = 0, free = 0;
  std::vector<PodShare> pods;
};

struct NodeStatus {
  std::string node;
  std::string error;        // set: an annotation did not parse
  bool has_shares = false;  // false: no gpulet.dev/gpu-memory
  std::string resource;
  int64_t unit_mib = 1024;
  std::vector<GpuStatus> gpus;
  std::vector<PodShare> pending;   // pods not yet admitted, with their units
  std::vector<std::string> notes;  // e.g. a pod on a GPU the node lacks
};

NodeStatus BuildNodeStatus(const NodeAnnotations& annotations);

// "8GiB" when the size is whole GiB, else "1536MiB".
std::string FormatMiB(int64_t mib);

// The table: NODE GPU MEMORY USED PENDING FREE PODS, one row per GPU and
// one PENDING row per node with pending pods, then a line per node without
// memory shares and per node in error.
std::string FormatStatusTable(const std::vector<NodeStatus>& nodes);

// {"nodes": [...]}, sizes in MiB; see docs/sharing.md.
nlohmann::json StatusJson(const std::vector<NodeStatus>& nodes);

}  // namespace gpulet::cli
