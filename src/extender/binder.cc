#include "src/extender/binder.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/common/logging.h"
#include "src/common/status_macros.h"
#include "src/kube/api_path.h"
#include "src/kube/api_status.h"
#include "src/sharing/annotations.h"

namespace gpulet::extender {
namespace {

using nlohmann::json;

absl::Status Prefixed(absl::string_view prefix, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

bool IsConflict(const absl::Status& s) {
  return s.code() == absl::StatusCode::kAborted && kube::HttpCode(s) == 409;
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
  GPULET_ASSIGN_OR_RETURN(std::string binding_path,
                          kube::PodBindingPath(request.pod_namespace,
                                               request.pod_name));
  GPULET_RETURN_IF_ERROR(kube::ValidateName("node name", request.node));
  absl::StatusOr<PodRequest> pod;
  if (request.pod != nullptr && !request.pod_uid.empty() &&
      request.pod->uid == request.pod_uid) {
    pod = *request.pod;
  } else {
    absl::StatusOr<json> pod_object = client_.Get(pod_path, stop);
    if (!pod_object.ok()) return Prefixed(what, pod_object.status());
    pod = ReadPod(*pod_object, options_.resource, options_.default_policy,
                  "pod");
  }
  if (!pod.ok()) return Prefixed(what, pod.status());
  if (!request.pod_uid.empty() && request.pod_uid != pod->uid) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, "the pod now has uid ", pod->uid, ", the scheduler placed uid ",
        request.pod_uid, " (deleted and created again)"));
  }
  if (!pod->empty()) {
    std::shared_ptr<absl::Mutex> lock = NodeLock(request.node);
    absl::MutexLock hold(lock.get());
    absl::Status reserved = Reserve(request.node, *pod, outcome, stop);
    if (!reserved.ok()) return Prefixed(what, reserved);
  }
  const json binding = {
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata",
       {{"name", pod->name}, {"namespace", pod->ns}, {"uid", pod->uid}}},
      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", request.node}}},
  };
  absl::StatusOr<json> bound = client_.Create(binding_path, binding, stop);
  if (bound.ok()) return absl::OkStatus();
  if (outcome->reserved) {
    std::shared_ptr<absl::Mutex> lock = NodeLock(request.node);
    absl::MutexLock hold(lock.get());
    absl::Status released = Release(request.node, *pod, stop);
    if (!released.ok()) {
      GPULET_LOG(WARNING) << what << "the pending entry stays until the node "
                                     "agent's timeout: "
                          << kube::ForLog(released);
    }
  }
  return Prefixed(what, bound.status());
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
      pending.pods.empty() ? json(nullptr) : json(sharing::EncodePending(pending));
  const json patch = {{"metadata",
                       {{"resourceVersion", view.resource_version},
                        {"annotations", annotations}}}};
  absl::StatusOr<json> written = client_.MergePatch(path, patch, stop);
  if (!written.ok()) return written.status();
  cache_.Update(*written);
  return absl::OkStatus();
}

absl::Status Binder::Reserve(const std::string& node, const PodRequest& pod,
                             BindOutcome* outcome, std::stop_token stop) {
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
      GPULET_ASSIGN_OR_RETURN(json object, client_.Get(path, stop));
      GPULET_ASSIGN_OR_RETURN(view, ReadNode(object));
      cache_.Update(object);
    }
    if (view.pending_status.ok() && HasPod(view.pending, pod)) {
      if (cached != nullptr) continue;  // believe only a fresh read
      // An earlier attempt (or a retried PATCH) already recorded it.
      outcome->reserved = true;
      return absl::OkStatus();
    }
    const Verdict verdict =
        Evaluate(options_.gone_pods != nullptr ? options_.gone_pods->Without(view)
                                               : view,
                 pod, options_.resource, options_.pack);
    if (!verdict.fits && cached != nullptr) continue;  // read it fresh
    if (!verdict.fits) {
      return absl::FailedPreconditionError(
          absl::StrCat("no longer fits: ", verdict.reason));
    }
    absl::Status s =
        WritePending(view, WithPod(view.pending, pod, options_.now()), stop);
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
