// Binder: kube-scheduler's bind verb for pods requesting GPU-memory units.
// It first records the pod in the node's `gpulet.dev/gpu-memory-pending`
// annotation, then creates the pod's Binding; the node agent removes the
// entry once the kubelet has admitted the pod.
//
// It binds only what the extender would have placed: it reads the pod
// from the API server and binds it only when its uid is the one the
// scheduler sent, it is still unbound, not being deleted, left to one of
// `scheduler_names` and asks for the resource; and only to a node that
// kube-scheduler's own filters would admit it to (node selector, required
// node affinity, taints, unschedulable: CheckNodeEligibility) and where
// filter's own verdict (Evaluate on the node as the API server has it)
// says it fits. Every other pod is refused with one message, whether it
// does not exist or was not placed here, so that the answer tells nothing
// about pods in other namespaces; nor do the other refusals: an
// ineligible node's names the node and the rule, not the pod's values; a
// pod that does not fit is told so without sizes (the log has them); an
// unknown node is "not known", not the API server's answer.
//
// The record is a read-modify-write of the Node: read it (first from the
// node cache, after a conflict from the API server), check that the pod
// still fits beside what is used and pending, then a JSON merge patch that
// carries the resourceVersion that was read. The API server answers 409
// Conflict when anyone (another extender replica, the node agent) wrote
// the Node in between; the Binder reads again and retries. That
// compare-and-swap is the only serialisation between replicas, so any
// number of them, and a replica that just restarted, never book the same
// units twice. Within one binder the writes to one Node take turns: the
// scheduler binds many pods at once, and to one Node they would otherwise
// only conflict with each other (every success a 409 for the rest).
// When creating the Binding fails, the entry is removed again the same way.
//
// Thread safety: Bind() may be called from many threads at once; the
// client and the cache are borrowed and must outlive the binder.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/cluster/extender/gone_pods.h"
#include "src/cluster/extender/node_cache.h"
#include "src/cluster/extender/placement.h"
#include "src/net/kube/client.h"

namespace gpulet::extender {

struct BindRequest {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;  // must equal the pod's
  std::string node;
};

// The answer to a bind of a pod that does not exist or that the extender
// would not place: the same for both.
inline constexpr char kNotPlacedHere[] =
    "no pending pod with this name and uid that asks for the extender's "
    "resource and is scheduled by a scheduler it serves";

struct BinderOptions {
  std::string resource = "nvidia.com/gpu-memory";
  Policy default_policy = Policy::kBinpack;
  // spec.schedulerName of the pods it binds (kube-scheduler's profiles
  // that use the extender).
  std::vector<std::string> scheduler_names = {"default-scheduler"};
  // Read-modify-write rounds before giving up on a busy Node.
  int max_conflicts = 20;
  sharing::PackOptions pack{};
  // Its WallNow() is the pending entries' "time" (compared by the node
  // agents with theirs, so wall time). Borrowed; must outlive the binder.
  const common::Clock* clock = &common::RealClock::Get();
  // Pods known to be gone: their pending entries do not count against the
  // pod (they stay in the annotation for the node agent to prune).
  const GonePods* gone_pods = nullptr;
};

struct BindOutcome {
  bool reserved = false;  // a pending entry was written (or already there)
  int conflicts = 0;      // 409 answers retried
};

class Binder {
 public:
  Binder(kube::Client& client, NodeCache& cache, BinderOptions options);

  // Binds the pod to the node. Errors name the pod and node:
  // FailedPrecondition with kNotPlacedHere for a pod that is not there or
  // not the extender's to place (see above), or when the node is not
  // eligible for it (the reason names the rule) or it does not fit the
  // node; NotFound for a node the API server does not know; Aborted after
  // max_conflicts conflicting writes, Unavailable when the pod or the
  // node cannot be read, else the API server's error.
  absl::Status Bind(const BindRequest& request, BindOutcome* outcome,
                    std::stop_token stop = {});

 private:
  // The pod `request` names, read from the API server, when the extender
  // may bind it.
  // `object` receives the Pod as read.
  absl::StatusOr<PodRequest> PlaceablePod(const BindRequest& request,
                                          const std::string& path,
                                          std::stop_token stop,
                                          nlohmann::json* object);
  // True when the pod object is the one with `uid`, unbound, not being
  // deleted, and left to one of the scheduler names.
  bool Placeable(const nlohmann::json& pod, const std::string& uid) const;
  // Adds the pod to the node's pending annotation (CAS loop), once the
  // node is eligible for `pod_object` and the pod fits.
  absl::Status Reserve(const std::string& node, const PodRequest& pod,
                       const nlohmann::json& pod_object, BindOutcome* outcome,
                       std::stop_token stop);
  // Removes it again (CAS loop); OK when it is not there.
  absl::Status Release(const std::string& node, const PodRequest& pod,
                       std::stop_token stop);
  // Writes `pending` to the node read as `view`; Aborted on a conflict.
  absl::Status WritePending(const NodeView& view,
                            const sharing::Pending& pending,
                            std::stop_token stop);

  // The lock this binder's writes to `node` take turns under.
  std::shared_ptr<absl::Mutex> NodeLock(const std::string& node);

  kube::Client& client_;
  NodeCache& cache_;
  const BinderOptions options_;
  absl::Mutex locks_mu_;
  std::map<std::string, std::shared_ptr<absl::Mutex>> node_locks_
      ABSL_GUARDED_BY(locks_mu_);
};

}  // namespace gpulet::extender
