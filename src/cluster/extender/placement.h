// Placement: whether a pod's GPU-memory requests fit a node, why not in
// words a user can act on, and how well (the prioritize score). Pure
// functions over values; the feasibility itself is sharing::Pack, the same
// function the node agent uses (docs/extender.md, "Feasibility").
//
// A node's state comes from its two annotations (sharing/):
// `gpulet.dev/gpu-memory` (per-GPU units and use, written by the node
// agent) and `gpulet.dev/gpu-memory-pending` (pods bound by an extender
// that the kubelet has not admitted yet). A pod fits when the outstanding
// pending requests plus each of its containers' requests can all be placed
// whole on single GPUs.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "src/cluster/extender/node_eligibility.h"
#include "src/model/sharing/annotations.h"
#include "src/model/sharing/pack.h"

namespace gpulet::extender {

// The node plugin's policy names the same choice for GPUs within a node.
using Policy = sharing::Policy;

// The pod annotation choosing the policy for one pod.
inline constexpr char kPolicyAnnotation[] = "gpulet.dev/gpu-memory-policy";

// "binpack" or "spread"; InvalidArgument naming `what` otherwise.
absl::StatusOr<Policy> ParsePolicy(absl::string_view value,
                                   absl::string_view what);
const char* PolicyName(Policy policy);

// What a pod asks for: its identity and, per container requesting the
// resource, the units.
struct PodRequest {
  std::string ns, name, uid;
  std::vector<sharing::PendingContainer> containers;  // units > 0 only
  Policy policy = Policy::kBinpack;

  bool empty() const { return containers.empty(); }
  std::string Key() const;  // "ns/name"
};

// Reads a v1.Pod: metadata, each container's limits (else requests) of
// `resource`, and the policy annotation (else `default_policy`). Errors
// (InvalidArgument) name the field with the prefix `where`:
// "<where>.spec.containers[1].resources.limits[nvidia.com/gpu-memory]: ...".
// An init container requesting the resource is refused: its units would
// be counted differently by the kubelet.
absl::StatusOr<PodRequest> ReadPod(const nlohmann::json& pod,
                                   absl::string_view resource,
                                   Policy default_policy,
                                   absl::string_view where);

// One node as the extender sees it, decoded from a Node object.
struct NodeView {
  std::string name;
  std::string resource_version;
  // NotFound when the node has no memory annotation, else the parse error.
  absl::Status memory_status;
  sharing::NodeMemory memory;
  absl::Status pending_status;  // the pending annotation's parse error
  sharing::Pending pending;
  // Labels, taints and spec.unschedulable, for bind's eligibility check;
  // traits_status is their parse error.
  absl::Status traits_status;
  NodeTraits traits;
};

// Decodes a v1.Node (name, resourceVersion, the two annotations, the
// traits). Errors only for an object without metadata.name; bad
// annotations and traits are kept in the view's statuses so the node is
// reported, not dropped.
absl::StatusOr<NodeView> ReadNode(const nlohmann::json& node);

struct Verdict {
  bool fits = false;
  // Preemption cannot help (no memory shares, GPUs too small, unhealthy).
  bool unresolvable = false;
  std::string reason;  // when it does not fit
  // The reason is about the node alone (no memory shares, another
  // resource, no healthy GPU): it says nothing of the pod's sizes or of
  // other pods.
  bool node_only = false;
  // Share of the node's healthy units in use once the pod is placed,
  // pending pods included (0..1); when it fits.
  double utilisation = 0;
};

// Whether `pod` fits `node`. Pending entries of the pod itself (a retry
// after a failed bind) are not counted against it.
Verdict Evaluate(const NodeView& node, const PodRequest& pod,
                 absl::string_view resource,
                 const sharing::PackOptions& options = {});

// The prioritize score 0..10 (kube-scheduler's MaxExtenderPriority): 0 for
// a node that does not fit; binpack prefers the fullest node after
// placement, spread the emptiest.
int64_t Score(const Verdict& verdict, Policy policy);

// `units` of `unit_mib` each as "12 GiB" or "1536 MiB".
std::string FormatMemory(int64_t units, int64_t unit_mib);

// The pending annotation with `pod` added (replacing an older entry of the
// same pod), stamped `now`.
sharing::Pending WithPod(sharing::Pending pending, const PodRequest& pod,
                         absl::Time now);
// The pending annotation without `pod`'s entries; `found` says whether it
// had any.
sharing::Pending WithoutPod(sharing::Pending pending, const PodRequest& pod,
                            bool* found);
// True when the pending annotation lists `pod`.
bool HasPod(const sharing::Pending& pending, const PodRequest& pod);

}  // namespace gpulet::extender
