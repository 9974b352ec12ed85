// Node eligibility: whether kube-scheduler's NodeUnschedulable,
// TaintToleration and NodeAffinity filters would admit a pod on a node,
// judged the way Kubernetes judges them, so that bind never places a pod
// where the scheduler itself would not (docs/extender.md, "Eligible nodes").
//
// The pod side is read from the Pod object: spec.nodeSelector, the
// required node affinity (spec.affinity.nodeAffinity.
// requiredDuringSchedulingIgnoredDuringExecution) and spec.tolerations.
// The node side is NodeTraits: its name, labels, taints and
// spec.unschedulable, read from the Node object by ReadNodeTraits.
//
// The rules, as in Kubernetes:
// - every nodeSelector entry must equal the node's label;
// - of the affinity's nodeSelectorTerms at least one must match (an empty
//   list, or a term with neither matchExpressions nor matchFields, matches
//   nothing); within a term every requirement must match; a term with a
//   requirement Kubernetes cannot parse (unknown operator, wrong number of
//   values, a Gt/Lt value that is not an integer, a field other than
//   metadata.name) matches nothing;
// - operators In, NotIn (also true without the label), Exists,
//   DoesNotExist, Gt and Lt (the label's value and the one given both
//   parsed as decimal 64-bit integers); matchFields: metadata.name with In
//   or NotIn and exactly one value;
// - a NoSchedule or NoExecute taint must be tolerated (PreferNoSchedule
//   never filters); a toleration with an empty effect matches every
//   effect, an empty key every key; operator Exists ignores the value,
//   Equal (or empty) needs the same value;
// - an unschedulable node admits only a pod tolerating the taint
//   node.kubernetes.io/unschedulable:NoSchedule.
// The reason for a refusal names the node and the rule (the selector or
// taint key), never the pod's values.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace gpulet::extender {

struct Taint {
  std::string key, value, effect;
};

// What of a Node the scheduling filters above look at.
struct NodeTraits {
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  bool unschedulable = false;
};

// Reads metadata.labels, spec.taints and spec.unschedulable of a v1.Node.
// InvalidArgument naming the field when one has the wrong type.
absl::StatusOr<NodeTraits> ReadNodeTraits(const nlohmann::json& node);

struct Eligibility {
  bool eligible = false;
  std::string reason;  // when not eligible: the node and the rule
};

// Whether the filters admit `pod` (a v1.Pod) on the node `node_name` with
// `node`. A pod field of the wrong type makes the node ineligible.
Eligibility CheckNodeEligibility(const nlohmann::json& pod,
                                 absl::string_view node_name,
                                 const NodeTraits& node);

}  // namespace gpulet::extender
