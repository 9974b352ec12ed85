#include "src/cluster/extender/node_eligibility.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/cluster/extender/json_member.h"

namespace gpulet::extender {
namespace {

using nlohmann::json;

constexpr char kUnschedulableTaint[] = "node.kubernetes.io/unschedulable";
// Terms a refusal names at most (the answer stays short).
constexpr size_t kShownTerms = 3;
constexpr char kAffinityField[] =
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";

// A string member; "" when absent; nullopt when not a string.
std::optional<std::string> StringMember(const json& object, const char* key) {
  const json* v = JsonMember(&object, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

// Go's strconv.ParseInt(s, 10, 64): an optional sign, then digits only.
std::optional<int64_t> ParseInt64(absl::string_view s) {
  const bool plus = !s.empty() && s.front() == '+';
  if (plus) s.remove_prefix(1);
  if (s.empty() || s.front() == '+' || (plus && s.front() == '-')) {
    return std::nullopt;
  }
  int64_t out = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return out;
}

// What one requirement says of a node; kInvalid when Kubernetes would not
// parse it, which makes its whole term match nothing.
enum class Match { kNo, kYes, kInvalid };

Match FromBool(bool b) { return b ? Match::kYes : Match::kNo; }

// The requirement's key, operator and values; nullopt on a wrong type.
struct Requirement {
  std::string key, op;
  std::vector<std::string> values;
};
std::optional<Requirement> ReadRequirement(const json& r) {
  if (!r.is_object()) return std::nullopt;
  std::optional<std::string> key = StringMember(r, "key");
  std::optional<std::string> op = StringMember(r, "operator");
  if (!key || !op) return std::nullopt;
  Requirement out{.key = *std::move(key), .op = *std::move(op), .values = {}};
  if (const json* values = JsonMember(&r, "values"); values != nullptr) {
    if (!values->is_array()) return std::nullopt;
    for (const json& v : *values) {
      if (!v.is_string()) return std::nullopt;
      out.values.push_back(v.get<std::string>());
    }
  }
  return out;
}

Match LabelMatch(const Requirement& r,
                 const std::map<std::string, std::string>& labels) {
  if (r.key.empty()) return Match::kInvalid;
  auto label = labels.find(r.key);
  const bool has = label != labels.end();
  if (r.op == "In" || r.op == "NotIn") {
    if (r.values.empty()) return Match::kInvalid;
    const bool in = has && std::find(r.values.begin(), r.values.end(),
                                     label->second) != r.values.end();
    return FromBool(r.op == "In" ? in : !in);
  }
  if (r.op == "Exists" || r.op == "DoesNotExist") {
    if (!r.values.empty()) return Match::kInvalid;
    return FromBool(r.op == "Exists" ? has : !has);
  }
  if (r.op == "Gt" || r.op == "Lt") {
    if (r.values.size() != 1) return Match::kInvalid;
    const std::optional<int64_t> bound = ParseInt64(r.values[0]);
    if (!bound) return Match::kInvalid;
    if (!has) return Match::kNo;
    const std::optional<int64_t> value = ParseInt64(label->second);
    if (!value) return Match::kNo;
    return FromBool(r.op == "Gt" ? *value > *bound : *value < *bound);
  }
  return Match::kInvalid;
}

Match FieldMatch(const Requirement& r, absl::string_view node_name) {
  if (r.key != "metadata.name" || r.values.size() != 1) return Match::kInvalid;
  if (r.op == "In") return FromBool(r.values[0] == node_name);
  if (r.op == "NotIn") return FromBool(r.values[0] != node_name);
  return Match::kInvalid;
}

// Whether one nodeSelectorTerm admits the node; when not, `why` names the
// first requirement that does not match (or is invalid).
bool TermMatches(const json& term, absl::string_view node_name,
                 const NodeTraits& node, std::string* why) {
  const json* exprs = JsonMember(&term, "matchExpressions");
  const json* fields = JsonMember(&term, "matchFields");
  if ((exprs != nullptr && !exprs->is_array()) ||
      (fields != nullptr && !fields->is_array())) {
    *why = "unreadable";
    return false;
  }
  if ((exprs == nullptr || exprs->empty()) &&
      (fields == nullptr || fields->empty())) {
    *why = "empty (matches no node)";
    return false;
  }
  bool matches = true;
  for (const json* list : {exprs, fields}) {
    if (list == nullptr) continue;
    const bool is_label = list == exprs;
    for (const json& r : *list) {
      const std::optional<Requirement> req = ReadRequirement(r);
      const Match m = !req       ? Match::kInvalid
                      : is_label ? LabelMatch(*req, node.labels)
                                 : FieldMatch(*req, node_name);
      if (m == Match::kYes) continue;
      // An invalid requirement fails its term whatever the others say.
      if (matches || m == Match::kInvalid) {
        *why = absl::StrCat(
            is_label ? "label " : "field ", req ? req->key : std::string("?"),
            m == Match::kInvalid ? " (invalid requirement)" : "");
      }
      if (m == Match::kInvalid) return false;
      matches = false;
    }
  }
  return matches;
}

Eligibility Refuse(absl::string_view node_name, absl::string_view why) {
  return {.eligible = false,
          .reason = absl::StrCat("node ", node_name, " ", why)};
}

// spec.nodeSelector: nullopt when it admits the node, else the refusal.
std::optional<Eligibility> CheckSelector(const json* spec,
                                         absl::string_view node_name,
                                         const NodeTraits& node) {
  const json* selector = JsonMember(spec, "nodeSelector");
  if (selector == nullptr) return std::nullopt;
  if (!selector->is_object()) {
    return Refuse(node_name,
                  "refused: the pod's spec.nodeSelector is unreadable");
  }
  for (const auto& [key, value] : selector->items()) {
    auto label = node.labels.find(key);
    if (!value.is_string() || label == node.labels.end() ||
        label->second != value.get_ref<const std::string&>()) {
      return Refuse(node_name, absl::StrCat("does not match the pod's "
                                            "spec.nodeSelector (label ",
                                            key, ")"));
    }
  }
  return std::nullopt;
}

// The required node affinity: nullopt when it admits the node, else the
// refusal, naming the first unmatched key of at most kShownTerms terms.
std::optional<Eligibility> CheckAffinity(const json* spec,
                                         absl::string_view node_name,
                                         const NodeTraits& node) {
  const json* required =
      JsonMember(JsonMember(JsonMember(spec, "affinity"), "nodeAffinity"),
                 "requiredDuringSchedulingIgnoredDuringExecution");
  if (required == nullptr) return std::nullopt;
  const json* terms = JsonMember(required, "nodeSelectorTerms");
  if (terms != nullptr && !terms->is_array()) {
    return Refuse(node_name, absl::StrCat("refused: the pod's ", kAffinityField,
                                          " is unreadable"));
  }
  std::vector<std::string> misses;
  if (terms != nullptr) {
    for (const json& term : *terms) {
      std::string why;
      if (TermMatches(term, node_name, node, &why)) return std::nullopt;
      misses.push_back(absl::StrCat("term ", misses.size(), ": ", why));
    }
  }
  if (misses.size() > kShownTerms) {
    const size_t more = misses.size() - kShownTerms;
    misses.resize(kShownTerms);
    misses.push_back(absl::StrCat(more, " more"));
  }
  if (misses.empty()) misses.push_back("no terms");
  return Refuse(
      node_name,
      absl::StrCat("matches none of the pod's required node "
                   "affinity terms (",
                   kAffinityField, "; ", absl::StrJoin(misses, "; "), ")"));
}

struct Toleration {
  std::string key, op, value, effect;
};

std::optional<std::vector<Toleration>> ReadTolerations(const json* spec) {
  std::vector<Toleration> out;
  const json* list = JsonMember(spec, "tolerations");
  if (list == nullptr) return out;
  if (!list->is_array()) return std::nullopt;
  for (const json& t : *list) {
    if (!t.is_object()) return std::nullopt;
    std::optional<std::string> key = StringMember(t, "key"),
                               op = StringMember(t, "operator"),
                               value = StringMember(t, "value"),
                               effect = StringMember(t, "effect");
    if (!key || !op || !value || !effect) return std::nullopt;
    out.push_back({*std::move(key), *std::move(op), *std::move(value),
                   *std::move(effect)});
  }
  return out;
}

bool Tolerates(const Toleration& t, const Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.op.empty() || t.op == "Equal") return t.value == taint.value;
  return t.op == "Exists";
}

bool Tolerated(const std::vector<Toleration>& tolerations, const Taint& taint) {
  return std::any_of(tolerations.begin(), tolerations.end(),
                     [&](const Toleration& t) { return Tolerates(t, taint); });
}

}  // namespace

absl::StatusOr<NodeTraits> ReadNodeTraits(const json& node) {
  NodeTraits out;
  const json* labels = JsonMember(JsonMember(&node, "metadata"), "labels");
  if (labels != nullptr) {
    if (!labels->is_object()) {
      return absl::InvalidArgumentError("metadata.labels: not an object");
    }
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("metadata.labels[", key, "]: not a string"));
      }
      out.labels.emplace(key, value.get<std::string>());
    }
  }
  const json* spec = JsonMember(&node, "spec");
  if (const json* u = JsonMember(spec, "unschedulable"); u != nullptr) {
    if (!u->is_boolean()) {
      return absl::InvalidArgumentError("spec.unschedulable: not a boolean");
    }
    out.unschedulable = u->get<bool>();
  }
  const json* taints = JsonMember(spec, "taints");
  if (taints == nullptr) return out;
  if (!taints->is_array()) {
    return absl::InvalidArgumentError("spec.taints: not a list");
  }
  for (size_t i = 0; i < taints->size(); ++i) {
    const json& t = (*taints)[i];
    std::optional<std::string> key, value, effect;
    if (t.is_object()) {
      key = StringMember(t, "key");
      value = StringMember(t, "value");
      effect = StringMember(t, "effect");
    }
    if (!key || !value || !effect) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.taints[", i, "]: not a taint"));
    }
    out.taints.push_back(
        {*std::move(key), *std::move(value), *std::move(effect)});
  }
  return out;
}

Eligibility CheckNodeEligibility(const json& pod, absl::string_view node_name,
                                 const NodeTraits& node) {
  const json* spec = JsonMember(&pod, "spec");
  const std::optional<std::vector<Toleration>> tolerations =
      ReadTolerations(spec);
  if (!tolerations) {
    return Refuse(node_name,
                  "refused: the pod's spec.tolerations is unreadable");
  }
  // In kube-scheduler's order: NodeUnschedulable, TaintToleration,
  // NodeAffinity.
  if (node.unschedulable &&
      !Tolerated(
          *tolerations,
          {.key = kUnschedulableTaint, .value = "", .effect = "NoSchedule"})) {
    return Refuse(node_name,
                  absl::StrCat("is unschedulable (spec.unschedulable) and the "
                               "pod does not tolerate ",
                               kUnschedulableTaint, ":NoSchedule"));
  }
  for (const Taint& taint : node.taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    if (!Tolerated(*tolerations, taint)) {
      return Refuse(node_name,
                    absl::StrCat("has the taint ", taint.key, ":", taint.effect,
                                 ", which the pod does not tolerate"));
    }
  }
  if (std::optional<Eligibility> no = CheckSelector(spec, node_name, node)) {
    return *no;
  }
  if (std::optional<Eligibility> no = CheckAffinity(spec, node_name, node)) {
    return *no;
  }
  return {.eligible = true, .reason = ""};
}

}  // namespace gpulet::extender
