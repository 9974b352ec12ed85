// Extender: kube-scheduler's HTTP extender protocol
// (k8s.io/kube-scheduler/extender/v1) for pods requesting GPU-memory
// units, on top of NodeCache (what each node has) and Binder (the
// compare-and-swap bind):
//
//   POST .../filter      ExtenderArgs -> ExtenderFilterResult
//   POST .../prioritize  ExtenderArgs -> HostPriorityList (scores 0..10)
//   POST .../bind        ExtenderBindingArgs -> ExtenderBindingResult
//   GET  /healthz        "ok" while the process serves
//   GET  /readyz         "ok" once the node cache holds a first list, else 503
//   GET  /metrics        Prometheus text format 0.0.4
//
// The verb is the last segment of the path, so any urlPrefix works. The
// wire types have no JSON tags: keys are Go's field names, matched ignoring
// case as Go's encoding/json does (an exact match first). ExtenderArgs
// carries NodeNames (nodeCacheCapable: true; nodes are then looked up in
// the cache) or a NodeList (its items' annotations are used for nodes the
// cache does not know yet).
//
// A request that is not what the protocol says (not JSON, no Pod, a node
// list of the wrong shape, a bind without a node or uid, a name Kubernetes
// would not accept, more than kMaxNodes nodes) is answered 400 with a
// message naming the field. What is wrong with the pod itself (an invalid
// policy annotation, a quantity that is not a whole number) is answered in
// the result's Error field, which the scheduler shows in the pod's events.
//
// Thread safety: every method may be called from many threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "src/base/metrics/registry.h"
#include "src/cluster/extender/binder.h"
#include "src/cluster/extender/gone_pods.h"
#include "src/cluster/extender/node_cache.h"
#include "src/cluster/extender/placement.h"
#include "src/net/http/request.h"

namespace gpulet::extender {

struct ExtenderOptions {
  std::string resource = "nvidia.com/gpu-memory";
  Policy default_policy = Policy::kBinpack;
  sharing::PackOptions pack{};
  // Pods known to be gone (GonePods::Without); none when null.
  const GonePods* gone_pods = nullptr;
};

class Extender {
 public:
  // Registers the extender's metrics in `registry`. All three are borrowed
  // and must outlive the extender.
  Extender(NodeCache& cache, Binder& binder, metrics::Registry& registry,
           ExtenderOptions options);

  // Routes one HTTP request.
  http::Response Handle(const http::Request& request);

  // The verbs on decoded bodies. InvalidArgument (-> 400) naming the field
  // for a malformed request.
  absl::StatusOr<nlohmann::json> Filter(const nlohmann::json& args);
  absl::StatusOr<nlohmann::json> Prioritize(const nlohmann::json& args);
  absl::StatusOr<nlohmann::json> Bind(const nlohmann::json& args);

 private:
  struct Args;
  absl::StatusOr<Args> ReadArgs(const nlohmann::json& args) const;
  // The view of node `i` of `args`: the cache's, else the NodeList item's.
  NodeViewPtr View(const Args& args, size_t i) const;
  http::Response Verb(const std::string& verb, const http::Request& request);

  NodeCache& cache_;
  Binder& binder_;
  metrics::Registry& registry_;
  const ExtenderOptions options_;
  metrics::Family* requests_ = nullptr;
  metrics::Family* request_seconds_ = nullptr;
  metrics::Family* filtered_nodes_ = nullptr;
  metrics::Family* binds_ = nullptr;
  metrics::Family* bind_conflicts_ = nullptr;
  metrics::Family* nodes_ = nullptr;
};

// The most nodes one filter or prioritize request may name (Kubernetes
// supports clusters of 5,000 nodes; the largest managed ones 15,000).
inline constexpr size_t kMaxNodes = 15000;

// The member of `object` named `name`, matched as Go's encoding/json
// matches struct fields: exactly first, else ignoring case. nullptr when
// absent or null.
const nlohmann::json* GoField(const nlohmann::json& object,
                              absl::string_view name);

}  // namespace gpulet::extender
