#include "src/cluster/extender/binder.h"

#include <memory>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/base/common/logging.h"
#include "src/base/common/status_macros.h"
#include "src/cluster/extender/json_member.h"
#include "src/cluster/extender/node_eligibility.h"
#include "src/model/sharing/annotations.h"
#include "src/net/kube/api_path.h"
#include "src/net/kube/api_status.h"

namespace gpulet::extender {
namespace {

using nlohmann::json;

absl::Status Prefixed(absl::string_view prefix, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

bool IsConflict(const absl::Status& s) {
  return s.code() == absl::StatusCode::kAborted && kube::HttpCode(s) == 409;
}

// FailedPrecondition when kube-scheduler's own filters would not place
// `pod` on the node: bind holds the permission to bind any pod to any
// node, so it must not let its caller do more than the scheduler would.
absl::Status CheckEligible(const NodeView& view, const json& pod) {
  if (!view.traits_status.ok()) {
    return absl::FailedPreconditionError(view.traits_status.message());
  }
  const Eligibility e = CheckNodeEligibility(pod, view.name, view.traits);
  if (e.eligible) return absl::OkStatus();
  return absl::FailedPreconditionError(e.reason);
}

// The answer for a pod that does not fit. Unless the reason is about the
// node alone it gives the pod's sizes and the node's other pending pods:
// logged, not answered, as the caller may not be the pod's.
absl::Status NoFit(const std::string& node, const PodRequest& pod,
                   const Verdict& verdict) {
  if (verdict.node_only) {
    return absl::FailedPreconditionError(
        absl::StrCat("no longer fits: ", verdict.reason));
  }
  GPULET_LOG(INFO) << "extender: bind pod " << pod.Key() << " to node " << node
                   << ": " << verdict.reason;
  return absl::FailedPreconditionError(
      absl::StrCat("the pod no longer fits on node ", node,
                   " (the extender's log says why)"));
}

// The answer for a Node that could not be read: not the API server's
// words (the request line, its status), which the caller need not learn.
absl::Status NodeUnread(const std::string& node, const absl::Status& s) {
  if (s.code() == absl::StatusCode::kNotFound || kube::HttpCode(s) == 404) {
    return absl::NotFoundError(absl::StrCat("node ", node, " is not known"));
  }
  GPULET_LOG(WARNING) << "extender: read node " << node << ": "
                      << kube::ForLog(s);
  return absl::UnavailableError(
      absl::StrCat("node ", node, " cannot be read now; try again"));
}

}  // namespace

Binder::Binder(kube::Client& client, NodeCache& cache, BinderOptions options)
    : client_(client), cache_(cache), options_(std::move(options)) {}

absl::Status Binder::Bind(const BindRequest& request, BindOutcome* outcome,
                          std::stop_token stop) {
  BindOutcome ignored;
  if (outcome == nullptr) outcome = &ignored;
  const std::string what =
      absl::StrCat("bind pod ", request.pod_namespace, "/", request.pod_name,
                   " to node ", request.node, ": ");
  GPULET_ASSIGN_OR_RETURN(
      std::string pod_path,
      kube::PodPath(request.pod_namespace, request.pod_name));
  GPULET_ASSIGN_OR_RETURN(
      std::string binding_path,
      kube::PodBindingPath(request.pod_namespace, request.pod_name));
  GPULET_RETURN_IF_ERROR(kube::ValidateName("node name", request.node));
  json pod_object;
  GPULET_ASSIGN_OR_RETURN(PodRequest pod,
                          PlaceablePod(request, pod_path, stop, &pod_object));
  {
    std::shared_ptr<absl::Mutex> lock = NodeLock(request.node);
    absl::MutexLock hold(lock.get());
    absl::Status reserved =
        Reserve(request.node, pod, pod_object, outcome, stop);
    if (!reserved.ok()) return Prefixed(what, reserved);
  }
  const json binding = {
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata",
       {{"name", pod.name}, {"namespace", pod.ns}, {"uid", pod.uid}}},
      {"target",
       {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", request.node}}},
  };
  absl::StatusOr<json> bound = client_.Create(binding_path, binding, stop);
  if (bound.ok()) return absl::OkStatus();
  if (outcome->reserved) {
    std::shared_ptr<absl::Mutex> lock = NodeLock(request.node);
    absl::MutexLock hold(lock.get());
    absl::Status released = Release(request.node, pod, stop);
    if (!released.ok()) {
      GPULET_LOG(WARNING) << what
                          << "the pending entry stays until the node "
                             "agent's timeout: "
                          << kube::ForLog(released);
    }
  }
  return Prefixed(what, bound.status());
}

absl::StatusOr<PodRequest> Binder::PlaceablePod(const BindRequest& request,
                                                const std::string& path,
                                                std::stop_token stop,
                                                json* object_out) {
  const std::string who =
      absl::StrCat("bind pod ", request.pod_namespace, "/", request.pod_name);
  const absl::Status refused =
      absl::FailedPreconditionError(absl::StrCat(who, ": ", kNotPlacedHere));
  if (request.pod_uid.empty()) return refused;
  absl::StatusOr<json> object = client_.Get(path, stop);
  if (!object.ok()) {
    if (object.status().code() == absl::StatusCode::kNotFound ||
        kube::HttpCode(object.status()) == 404) {
      return refused;
    }
    // Logged, not answered: the API server's words may say more about the
    // pod than the caller may learn.
    GPULET_LOG(WARNING) << who << ": " << kube::ForLog(object.status());
    return absl::UnavailableError(
        absl::StrCat(who, ": the pod cannot be read now; try again"));
  }
  if (!Placeable(*object, request.pod_uid)) return refused;
  absl::StatusOr<PodRequest> pod =
      ReadPod(*object, options_.resource, options_.default_policy, "pod");
  if (!pod.ok()) return Prefixed(absl::StrCat(who, ": "), pod.status());
  if (pod->empty()) return refused;
  *object_out = *std::move(object);
  return pod;
}

bool Binder::Placeable(const json& pod, const std::string& uid) const {
  const json* meta = JsonMember(pod, "metadata");
  const json* spec = JsonMember(pod, "spec");
  if (meta == nullptr || spec == nullptr) return false;
  const json* pod_uid = JsonMember(*meta, "uid");
  if (pod_uid == nullptr || !pod_uid->is_string() || *pod_uid != uid) {
    return false;
  }
  if (JsonMember(*meta, "deletionTimestamp") != nullptr) return false;
  const json* node = JsonMember(*spec, "nodeName");
  if (node != nullptr &&
      !(node->is_string() && node->get_ref<const std::string&>().empty())) {
    return false;  // bound already
  }
  const json* scheduler = JsonMember(*spec, "schedulerName");
  const std::string name =
      scheduler != nullptr && scheduler->is_string() &&
              !scheduler->get_ref<const std::string&>().empty()
          ? scheduler->get<std::string>()
          : std::string("default-scheduler");
  return absl::c_linear_search(options_.scheduler_names, name);
}

std::shared_ptr<absl::Mutex> Binder::NodeLock(const std::string& node) {
  absl::MutexLock lock(&locks_mu_);
  std::shared_ptr<absl::Mutex>& m = node_locks_[node];
  if (m == nullptr) m = std::make_shared<absl::Mutex>();
  return m;
}

absl::Status Binder::WritePending(const NodeView& view,
                                  const sharing::Pending& pending,
                                  std::stop_token stop) {
  GPULET_ASSIGN_OR_RETURN(std::string path, kube::NodePath(view.name));
  json annotations = json::object();
  annotations[std::string(sharing::kPendingAnnotation)] =
      pending.pods.empty() ? json(nullptr)
                           : json(sharing::EncodePending(pending));
  const json patch = {{"metadata",
                       {{"resourceVersion", view.resource_version},
                        {"annotations", annotations}}}};
  absl::StatusOr<json> written = client_.MergePatch(path, patch, stop);
  if (!written.ok()) return written.status();
  cache_.Update(*written);
  return absl::OkStatus();
}

absl::Status Binder::Reserve(const std::string& node, const PodRequest& pod,
                             const json& pod_object, BindOutcome* outcome,
                             std::stop_token stop) {
  GPULET_ASSIGN_OR_RETURN(std::string path, kube::NodePath(node));
  for (int round = 0; round <= options_.max_conflicts; ++round) {
    // The cache's view first: when it is current the write succeeds without
    // a read; when it is not, the API server says 409 and the next round
    // reads the Node itself.
    NodeViewPtr cached = round == 0 ? cache_.Find(node) : nullptr;
    NodeView view;
    if (cached != nullptr && !cached->resource_version.empty()) {
      view = *cached;
    } else {
      absl::StatusOr<json> object = client_.Get(path, stop);
      if (!object.ok()) return NodeUnread(node, object.status());
      GPULET_ASSIGN_OR_RETURN(view, ReadNode(*object));
      cache_.Update(*object);
    }
    // Before anything else, the recorded-already answer included: a node
    // the scheduler would not choose is refused whatever it holds.
    if (absl::Status eligible = CheckEligible(view, pod_object);
        !eligible.ok()) {
      if (cached != nullptr) continue;  // read it fresh
      return eligible;
    }
    if (view.pending_status.ok() && HasPod(view.pending, pod)) {
      if (cached != nullptr) continue;  // believe only a fresh read
      // An earlier attempt (or a retried PATCH) already recorded it.
      outcome->reserved = true;
      return absl::OkStatus();
    }
    const Verdict verdict = Evaluate(options_.gone_pods != nullptr
                                         ? options_.gone_pods->Without(view)
                                         : view,
                                     pod, options_.resource, options_.pack);
    if (!verdict.fits && cached != nullptr) continue;  // read it fresh
    if (!verdict.fits) return NoFit(node, pod, verdict);
    absl::Status s = WritePending(
        view, WithPod(view.pending, pod, options_.clock->WallNow()), stop);
    if (s.ok()) {
      outcome->reserved = true;
      return s;
    }
    if (!IsConflict(s)) return s;
    ++outcome->conflicts;
  }
  return absl::AbortedError(absl::StrCat(
      "node ", node, " changed under every one of ", options_.max_conflicts + 1,
      " attempts to record the pod; try again"));
}

absl::Status Binder::Release(const std::string& node, const PodRequest& pod,
                             std::stop_token stop) {
  GPULET_ASSIGN_OR_RETURN(std::string path, kube::NodePath(node));
  for (int round = 0; round <= options_.max_conflicts; ++round) {
    GPULET_ASSIGN_OR_RETURN(json object, client_.Get(path, stop));
    GPULET_ASSIGN_OR_RETURN(NodeView view, ReadNode(object));
    if (!view.pending_status.ok()) return view.pending_status;
    bool found = false;
    sharing::Pending rest = WithoutPod(view.pending, pod, &found);
    if (!found) return absl::OkStatus();
    absl::Status s = WritePending(view, rest, stop);
    if (!IsConflict(s)) return s;
  }
  return absl::AbortedError(absl::StrCat("node ", node, " kept changing"));
}

}  // namespace gpulet::extender
