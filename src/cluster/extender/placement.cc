#include "src/cluster/extender/placement.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/common/status_macros.h"
#include "src/cluster/extender/names.h"

namespace gpulet::extender {
namespace {

using nlohmann::json;

absl::Status Bad(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

// A string member of `object`, "" when absent; an error when not a string.
absl::StatusOr<std::string> StringField(const json& object,
                                        const std::string& key,
                                        absl::string_view where) {
  if (!object.is_object() || !object.contains(key) || object[key].is_null()) {
    return std::string();
  }
  if (!object[key].is_string()) {
    return Bad(absl::StrCat(where, ".", key), "not a string");
  }
  return object[key].get<std::string>();
}

// An extended-resource quantity: a whole, non-negative number of units,
// as a string ("4") or a JSON number.
absl::StatusOr<int64_t> Units(const json& value, absl::string_view field) {
  int64_t units = -1;
  if (value.is_number_integer()) {
    units = value.get<int64_t>();
  } else if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    const bool digits =
        !s.empty() && s.size() <= 15 &&
        std::all_of(s.begin(), s.end(), [](char c) {
          return absl::ascii_isdigit(static_cast<unsigned char>(c));
        });
    if (!digits || !absl::SimpleAtoi(s, &units)) units = -1;
  }
  if (units < 0) {
    const std::string shown =
        value.is_string() ? value.get<std::string>() : value.dump();
    return Bad(field,
               absl::StrCat("\"", shown, "\" is not a whole number of units"));
  }
  return units;
}

// The units one container asks for: limits, else requests (the API server
// makes them equal for extended resources).
absl::StatusOr<int64_t> ContainerUnits(const json& container,
                                       const std::string& resource,
                                       absl::string_view where) {
  if (!container.is_object()) return Bad(where, "not an object");
  if (!container.contains("resources")) return 0;
  const json& resources = container["resources"];
  for (const char* kind : {"limits", "requests"}) {
    if (!resources.is_object() || !resources.contains(kind)) continue;
    const json& list = resources[kind];
    if (!list.is_object()) {
      return Bad(absl::StrCat(where, ".resources.", kind), "not an object");
    }
    if (list.contains(resource)) {
      return Units(list[resource], absl::StrCat(where, ".resources.", kind, "[",
                                                resource, "]"));
    }
  }
  return 0;
}

bool SamePod(const std::string& uid, const std::string& ns,
             const std::string& name, const PodRequest& pod) {
  return sharing::SamePod(uid, ns, name, pod.uid, pod.ns, pod.name);
}

}  // namespace

absl::StatusOr<Policy> ParsePolicy(absl::string_view value,
                                   absl::string_view what) {
  if (value == "binpack") return Policy::kBinpack;
  if (value == "spread") return Policy::kSpread;
  return absl::InvalidArgumentError(absl::StrCat(
      what, ": \"", value, "\" is not a policy (binpack or spread)"));
}

const char* PolicyName(Policy policy) {
  return policy == Policy::kSpread ? "spread" : "binpack";
}

std::string PodRequest::Key() const { return absl::StrCat(ns, "/", name); }

absl::StatusOr<PodRequest> ReadPod(const json& pod, absl::string_view resource,
                                   Policy default_policy,
                                   absl::string_view where) {
  if (!pod.is_object()) return Bad(where, "not an object");
  const json empty = json::object();
  const json& meta = pod.contains("metadata") ? pod["metadata"] : empty;
  const std::string meta_where = absl::StrCat(where, ".metadata");
  PodRequest out;
  GPULET_ASSIGN_OR_RETURN(out.name, StringField(meta, "name", meta_where));
  GPULET_ASSIGN_OR_RETURN(out.ns, StringField(meta, "namespace", meta_where));
  GPULET_ASSIGN_OR_RETURN(out.uid, StringField(meta, "uid", meta_where));
  if (out.name.empty()) return Bad(meta_where + ".name", "missing");
  if (out.ns.empty()) out.ns = "default";
  GPULET_RETURN_IF_ERROR(CheckSubdomain(meta_where + ".name", out.name));
  GPULET_RETURN_IF_ERROR(CheckLabel(meta_where + ".namespace", out.ns));
  if (!out.uid.empty()) {
    GPULET_RETURN_IF_ERROR(CheckUid(meta_where + ".uid", out.uid));
  }
  out.policy = default_policy;
  if (meta.is_object() && meta.contains("annotations")) {
    const std::string ann_where = meta_where + ".annotations";
    GPULET_ASSIGN_OR_RETURN(
        std::string policy,
        StringField(meta["annotations"], kPolicyAnnotation, ann_where));
    if (!policy.empty()) {
      GPULET_ASSIGN_OR_RETURN(
          out.policy,
          ParsePolicy(policy,
                      absl::StrCat(ann_where, "[", kPolicyAnnotation, "]")));
    }
  }
  const json& spec = pod.contains("spec") ? pod["spec"] : empty;
  const std::string res(resource);
  for (const char* list : {"initContainers", "containers"}) {
    if (!spec.is_object() || !spec.contains(list)) continue;
    const std::string list_where = absl::StrCat(where, ".spec.", list);
    if (!spec[list].is_array()) return Bad(list_where, "not a list");
    for (size_t i = 0; i < spec[list].size(); ++i) {
      const std::string c_where = absl::StrCat(list_where, "[", i, "]");
      const json& c = spec[list][i];
      GPULET_ASSIGN_OR_RETURN(int64_t units, ContainerUnits(c, res, c_where));
      if (units == 0) continue;
      if (std::string_view(list) == "initContainers") {
        return Bad(c_where, absl::StrCat("init containers requesting ",
                                         resource, " are not supported"));
      }
      GPULET_ASSIGN_OR_RETURN(std::string name,
                              StringField(c, "name", c_where));
      GPULET_RETURN_IF_ERROR(CheckLabel(c_where + ".name", name));
      out.containers.push_back({.name = std::move(name), .units = units});
    }
  }
  return out;
}

absl::StatusOr<NodeView> ReadNode(const json& node) {
  if (!node.is_object() || !node.contains("metadata") ||
      !node["metadata"].is_object()) {
    return Bad("node", "no metadata");
  }
  const json& meta = node["metadata"];
  NodeView view;
  GPULET_ASSIGN_OR_RETURN(view.name, StringField(meta, "name", "metadata"));
  if (view.name.empty()) return Bad("node metadata.name", "missing");
  GPULET_ASSIGN_OR_RETURN(view.resource_version,
                          StringField(meta, "resourceVersion", "metadata"));
  const json empty = json::object();
  const json& annotations =
      meta.contains("annotations") && meta["annotations"].is_object()
          ? meta["annotations"]
          : empty;
  const std::string memory_key(sharing::kNodeAnnotation);
  const std::string pending_key(sharing::kPendingAnnotation);
  if (!annotations.contains(memory_key)) {
    view.memory_status = absl::NotFoundError(
        absl::StrCat("node ", view.name, " has no ", memory_key,
                     " annotation (no gpulet node agent with memory shares "
                     "runs there)"));
  } else if (!annotations[memory_key].is_string()) {
    view.memory_status = Bad(memory_key, "not a string");
  } else {
    absl::StatusOr<sharing::NodeMemory> memory = sharing::ParseNodeMemory(
        annotations[memory_key].get_ref<const std::string&>());
    if (memory.ok()) {
      view.memory = *std::move(memory);
    } else {
      view.memory_status = memory.status();
    }
  }
  absl::StatusOr<NodeTraits> traits = ReadNodeTraits(node);
  if (traits.ok()) {
    view.traits = *std::move(traits);
  } else {
    view.traits_status = absl::Status(
        traits.status().code(),
        absl::StrCat("node ", view.name, ": ", traits.status().message()));
  }
  if (annotations.contains(pending_key)) {
    if (!annotations[pending_key].is_string()) {
      view.pending_status = Bad(pending_key, "not a string");
    } else {
      absl::StatusOr<sharing::Pending> pending = sharing::ParsePending(
          annotations[pending_key].get_ref<const std::string&>());
      if (pending.ok()) {
        view.pending = *std::move(pending);
      } else {
        view.pending_status = pending.status();
      }
    }
  }
  return view;
}

std::string FormatMemory(int64_t units, int64_t unit_mib) {
  const int64_t mib = units * unit_mib;
  if (mib % 1024 == 0) return absl::StrCat(mib / 1024, " GiB");
  return absl::StrCat(mib, " MiB");
}

Verdict Evaluate(const NodeView& node, const PodRequest& pod,
                 absl::string_view resource,
                 const sharing::PackOptions& options) {
  Verdict v;
  const std::string& n = node.name;
  if (!node.memory_status.ok()) {
    v.node_only = true;
    v.unresolvable = true;
    v.reason =
        node.memory_status.code() == absl::StatusCode::kNotFound
            ? std::string(node.memory_status.message())
            : absl::StrCat("node ", n, ": annotation ",
                           std::string(sharing::kNodeAnnotation),
                           " is invalid: ", node.memory_status.message());
    return v;
  }
  const sharing::NodeMemory& mem = node.memory;
  if (mem.resource != resource) {
    v.node_only = true;
    v.unresolvable = true;
    v.reason = absl::StrCat("node ", n, " shares GPU memory as ", mem.resource,
                            ", not ", resource);
    return v;
  }
  if (!node.pending_status.ok()) {
    v.reason = absl::StrCat("node ", n, ": annotation ",
                            std::string(sharing::kPendingAnnotation),
                            " is invalid (", node.pending_status.message(),
                            "); waiting for the node agent to rewrite it");
    return v;
  }
  const std::vector<sharing::GpuSpace>& gpus = mem.gpus;
  int64_t largest_total = 0, largest_free = 0, healthy_units = 0, used = 0;
  const sharing::GpuSpace* freest = nullptr;
  for (const sharing::GpuSpace& g : gpus) {
    if (!g.healthy) continue;
    healthy_units += g.units;
    used += g.units - sharing::FreeUnits(g);
    largest_total = std::max(largest_total, g.units);
    if (freest == nullptr || sharing::FreeUnits(g) > largest_free) {
      freest = &g;
      largest_free = sharing::FreeUnits(g);
    }
  }
  const auto fmt = [&](int64_t units) {
    return FormatMemory(units, mem.unit_mib);
  };
  if (freest == nullptr) {
    v.node_only = true;
    v.unresolvable = true;
    v.reason = absl::StrCat("node ", n, " has no healthy GPU for ", resource);
    return v;
  }
  int64_t biggest = 0, pod_units = 0;
  for (const auto& c : pod.containers) {
    biggest = std::max(biggest, c.units);
    pod_units += c.units;
  }
  if (biggest > largest_total) {
    v.unresolvable = true;
    v.reason = absl::StrCat("no GPU on node ", n, " has ", fmt(biggest),
                            " (largest: ", fmt(largest_total), ")");
    return v;
  }
  if (biggest > largest_free) {
    v.reason = absl::StrCat("no single GPU on node ", n, " has ", fmt(biggest),
                            " free (largest free: ", fmt(largest_free), " on ",
                            freest->uuid, ")");
    return v;
  }
  sharing::Pending others;
  for (const sharing::PendingPod& p : node.pending.pods) {
    if (!SamePod(p.uid, p.ns, p.name, pod)) others.pods.push_back(p);
  }
  std::vector<sharing::Request> reqs =
      sharing::OutstandingRequests(others, mem);
  int64_t pending_units = 0;
  for (const sharing::Request& r : reqs) pending_units += r.units;
  const size_t pending_count = reqs.size();
  for (const auto& c : pod.containers) {
    reqs.push_back(
        {.key = absl::StrCat(pod.Key(), "/", c.name), .units = c.units});
  }
  absl::StatusOr<std::vector<int>> packed = sharing::Pack(gpus, reqs, options);
  if (!packed.ok()) {
    std::vector<std::string> sizes;
    for (const auto& c : pod.containers) sizes.push_back(fmt(c.units));
    std::vector<std::string> free;
    for (const sharing::GpuSpace& g : gpus) {
      if (g.healthy) {
        free.push_back(
            absl::StrCat(fmt(sharing::FreeUnits(g)), " on ", g.uuid));
      }
    }
    v.reason = absl::StrCat(
        "node ", n, ": the pod's containers (", absl::StrJoin(sizes, ", "),
        ") do not fit on single GPUs beside ", pending_count,
        " pending container(s) (", fmt(pending_units),
        ") not yet admitted; free: ", absl::StrJoin(free, ", "));
    if (packed.status().code() == absl::StatusCode::kResourceExhausted) {
      absl::StrAppend(&v.reason,
                      " (placement search budget exhausted; counted as "
                      "not fitting)");
    }
    return v;
  }
  v.fits = true;
  v.utilisation = healthy_units == 0
                      ? 1.0
                      : std::min(1.0, static_cast<double>(used + pending_units +
                                                          pod_units) /
                                          static_cast<double>(healthy_units));
  return v;
}

int64_t Score(const Verdict& verdict, Policy policy) {
  if (!verdict.fits) return 0;
  const double u = std::clamp(verdict.utilisation, 0.0, 1.0);
  const double score = policy == Policy::kBinpack ? 10 * u : 10 * (1 - u);
  return static_cast<int64_t>(std::lround(score));
}

sharing::Pending WithPod(sharing::Pending pending, const PodRequest& pod,
                         absl::Time now) {
  bool found = false;
  pending = WithoutPod(std::move(pending), pod, &found);
  pending.pods.push_back({.uid = pod.uid,
                          .ns = pod.ns,
                          .name = pod.name,
                          .time = now,
                          .containers = pod.containers});
  return pending;
}

sharing::Pending WithoutPod(sharing::Pending pending, const PodRequest& pod,
                            bool* found) {
  const size_t before = pending.pods.size();
  std::erase_if(pending.pods, [&](const sharing::PendingPod& p) {
    return SamePod(p.uid, p.ns, p.name, pod);
  });
  if (found != nullptr) *found = pending.pods.size() != before;
  return pending;
}

bool HasPod(const sharing::Pending& pending, const PodRequest& pod) {
  return std::any_of(pending.pods.begin(), pending.pods.end(),
                     [&](const sharing::PendingPod& p) {
                       return SamePod(p.uid, p.ns, p.name, pod);
                     });
}

}  // namespace gpulet::extender
