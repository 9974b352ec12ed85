#include "src/cluster/extender/extender.h"

#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/check.h"
#include "src/base/common/status_macros.h"
#include "src/cluster/extender/names.h"
#include "src/net/http/metrics_handler.h"
#include "src/net/kube/api_status.h"

namespace gpulet::extender {
namespace {

using nlohmann::json;

absl::Status Bad(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

metrics::Family* Counter(metrics::Registry& registry, const std::string& name,
                         const std::string& help,
                         std::vector<std::string> labels) {
  absl::StatusOr<metrics::Family*> f =
      registry.AddCounter(name, help, std::move(labels));
  // The names are constants: a failure is a programming error.
  GPULET_CHECK(f.ok()) << f.status().message();
  return *f;
}

// Deepest a request may nest: a Pod is about 10 levels deep. Deeper input
// is refused before parsing, as copying and printing it recurse.
constexpr int kMaxJsonDepth = 64;

http::Response JsonResponse(const json& body) {
  return http::Response{
      .status = 200,
      .content_type = "application/json",
      .body = body.dump(-1, ' ', false, json::error_handler_t::replace)};
}

// True when `text` nests arrays and objects deeper than `limit` (brackets
// inside strings do not count).
bool TooDeep(absl::string_view text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

absl::Status CheckCount(absl::string_view field, const json& list) {
  if (list.size() <= kMaxNodes) return absl::OkStatus();
  return Bad(field, absl::StrCat(list.size(), " nodes, more than the ",
                                 kMaxNodes, " one request may name"));
}

// The string member `name` (Go field matching); "" when absent.
absl::StatusOr<std::string> GoString(const json& object, absl::string_view name,
                                     absl::string_view where) {
  const json* value = GoField(object, name);
  if (value == nullptr) return std::string();
  if (!value->is_string()) {
    return Bad(absl::StrCat(where, ".", name), "not a string");
  }
  return value->get<std::string>();
}

}  // namespace

const json* GoField(const json& object, absl::string_view name) {
  if (!object.is_object()) return nullptr;
  auto exact = object.find(std::string(name));
  if (exact != object.end()) return exact->is_null() ? nullptr : &*exact;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (absl::EqualsIgnoreCase(it.key(), name)) {
      return it->is_null() ? nullptr : &*it;
    }
  }
  return nullptr;
}

struct Extender::Args {
  const json* pod = nullptr;
  std::vector<std::string> names;
  std::vector<const json*> items;  // the NodeList's objects, when sent
  bool node_list = false;
};

Extender::Extender(NodeCache& cache, Binder& binder,
                   metrics::Registry& registry, ExtenderOptions options)
    : cache_(cache),
      binder_(binder),
      registry_(registry),
      options_(std::move(options)) {
  requests_ = Counter(registry, "gpulet_extender_requests_total",
                      "Requests to the scheduler extender, by verb and HTTP "
                      "status code.",
                      {"verb", "code"});
  request_seconds_ =
      Counter(registry, "gpulet_extender_request_seconds_total",
              "Time spent answering extender requests, by verb (divide by "
              "gpulet_extender_requests_total for the mean).",
              {"verb"});
  filtered_nodes_ = Counter(registry, "gpulet_extender_filtered_nodes_total",
                            "Nodes judged by filter: fit, failed (may fit "
                            "later) or unresolvable.",
                            {"result"});
  binds_ = Counter(registry, "gpulet_extender_binds_total",
                   "Bind requests by result (ok, error).", {"result"});
  bind_conflicts_ = Counter(
      registry, "gpulet_extender_bind_conflicts_total",
      "409 Conflict answers to the pending-annotation write, each retried.",
      {});
  absl::StatusOr<metrics::Family*> nodes = registry.AddGauge(
      "gpulet_extender_nodes", "Nodes in the extender's node cache.", {});
  GPULET_CHECK(nodes.ok()) << nodes.status().message();
  nodes_ = *nodes;
  for (const char* verb : {"filter", "prioritize", "bind"}) {
    requests_->Add({verb, "200"}, 0);
    request_seconds_->Add({verb}, 0);
  }
  for (const char* result : {"fit", "failed", "unresolvable"}) {
    filtered_nodes_->Add({result}, 0);
  }
  binds_->Add({"ok"}, 0);
  binds_->Add({"error"}, 0);
  bind_conflicts_->Add({}, 0);
}

absl::StatusOr<Extender::Args> Extender::ReadArgs(const json& body) const {
  if (!body.is_object()) return Bad("ExtenderArgs", "not a JSON object");
  Args args;
  args.pod = GoField(body, "Pod");
  if (args.pod == nullptr) return Bad("ExtenderArgs.Pod", "missing");
  if (!args.pod->is_object()) return Bad("ExtenderArgs.Pod", "not an object");
  if (const json* names = GoField(body, "NodeNames"); names != nullptr) {
    if (!names->is_array()) return Bad("ExtenderArgs.NodeNames", "not a list");
    GPULET_RETURN_IF_ERROR(CheckCount("ExtenderArgs.NodeNames", *names));
    for (size_t i = 0; i < names->size(); ++i) {
      const std::string where = absl::StrCat("ExtenderArgs.NodeNames[", i, "]");
      if (!(*names)[i].is_string()) return Bad(where, "not a string");
      const std::string& name = (*names)[i].get_ref<const std::string&>();
      GPULET_RETURN_IF_ERROR(CheckSubdomain(where, name));
      args.names.push_back(name);
    }
    return args;
  }
  const json* nodes = GoField(body, "Nodes");
  if (nodes == nullptr) {
    return Bad("ExtenderArgs", "neither NodeNames nor Nodes given");
  }
  const json* items = nodes->is_object() && nodes->contains("items")
                          ? &(*nodes)["items"]
                          : nullptr;
  if (items == nullptr || !items->is_array()) {
    return Bad("ExtenderArgs.Nodes.items", "missing or not a list");
  }
  args.node_list = true;
  GPULET_RETURN_IF_ERROR(CheckCount("ExtenderArgs.Nodes.items", *items));
  for (size_t i = 0; i < items->size(); ++i) {
    const json& item = (*items)[i];
    const std::string where = absl::StrCat("ExtenderArgs.Nodes.items[", i, "]");
    if (!item.is_object() || !item.contains("metadata") ||
        !item["metadata"].is_object() || !item["metadata"].contains("name") ||
        !item["metadata"]["name"].is_string()) {
      return Bad(where + ".metadata.name", "missing or not a string");
    }
    const std::string& name =
        item["metadata"]["name"].get_ref<const std::string&>();
    GPULET_RETURN_IF_ERROR(CheckSubdomain(where + ".metadata.name", name));
    args.names.push_back(name);
    args.items.push_back(&item);
  }
  return args;
}

NodeViewPtr Extender::View(const Args& args, size_t i) const {
  NodeViewPtr view = cache_.Find(args.names[i]);
  if (view == nullptr && args.node_list) {
    absl::StatusOr<NodeView> sent = ReadNode(*args.items[i]);
    if (sent.ok()) view = std::make_shared<const NodeView>(*std::move(sent));
  }
  if (view == nullptr || options_.gone_pods == nullptr ||
      view->pending.pods.empty()) {
    return view;
  }
  return std::make_shared<const NodeView>(options_.gone_pods->Without(*view));
}

// Filter weighs GPU memory only. kube-scheduler calls it with the nodes
// its own filters (node selector and affinity, taints, unschedulable)
// have admitted, and a filter answer places nothing; bind, which does,
// checks those rules itself (CheckNodeEligibility in binder.cc).
absl::StatusOr<json> Extender::Filter(const json& body) {
  GPULET_ASSIGN_OR_RETURN(Args args, ReadArgs(body));
  json failed = json::object(), unresolvable = json::object();
  json result = {{"Nodes", nullptr}, {"NodeNames", nullptr}, {"Error", ""}};
  absl::StatusOr<PodRequest> pod =
      ReadPod(*args.pod, options_.resource, options_.default_policy,
              "ExtenderArgs.Pod");
  std::vector<size_t> fit;
  int64_t failed_count = 0, unresolvable_count = 0;
  if (!pod.ok()) {
    result["Error"] = std::string(pod.status().message());
  } else {
    for (size_t i = 0; i < args.names.size(); ++i) {
      if (pod->empty()) {
        fit.push_back(i);
        continue;
      }
      NodeViewPtr view = View(args, i);
      if (view == nullptr) {
        failed[args.names[i]] =
            absl::StrCat("node ", args.names[i],
                         " is not in the GPU-memory extender's node cache yet");
        ++failed_count;
        continue;
      }
      const Verdict v = Evaluate(*view, *pod, options_.resource, options_.pack);
      if (v.fits) {
        fit.push_back(i);
      } else if (v.unresolvable) {
        unresolvable[args.names[i]] = v.reason;
        ++unresolvable_count;
      } else {
        failed[args.names[i]] = v.reason;
        ++failed_count;
      }
    }
    if (!pod->empty()) {
      filtered_nodes_->Add({"fit"}, static_cast<double>(fit.size()));
      filtered_nodes_->Add({"failed"}, static_cast<double>(failed_count));
      filtered_nodes_->Add({"unresolvable"},
                           static_cast<double>(unresolvable_count));
    }
  }
  if (args.node_list) {
    json items = json::array();
    for (size_t i : fit) items.push_back(*args.items[i]);
    result["Nodes"] = {{"items", std::move(items)}};
  } else {
    json names = json::array();
    for (size_t i : fit) names.push_back(args.names[i]);
    result["NodeNames"] = std::move(names);
  }
  result["FailedNodes"] = std::move(failed);
  result["FailedAndUnresolvableNodes"] = std::move(unresolvable);
  return result;
}

absl::StatusOr<json> Extender::Prioritize(const json& body) {
  GPULET_ASSIGN_OR_RETURN(Args args, ReadArgs(body));
  absl::StatusOr<PodRequest> pod =
      ReadPod(*args.pod, options_.resource, options_.default_policy,
              "ExtenderArgs.Pod");
  json list = json::array();
  for (size_t i = 0; i < args.names.size(); ++i) {
    int64_t score = 0;
    if (pod.ok() && !pod->empty()) {
      if (NodeViewPtr view = View(args, i); view != nullptr) {
        score = Score(Evaluate(*view, *pod, options_.resource, options_.pack),
                      pod->policy);
      }
    }
    list.push_back({{"Host", args.names[i]}, {"Score", score}});
  }
  return list;
}

absl::StatusOr<json> Extender::Bind(const json& body) {
  if (!body.is_object()) return Bad("ExtenderBindingArgs", "not a JSON object");
  BindRequest request;
  const char* where = "ExtenderBindingArgs";
  GPULET_ASSIGN_OR_RETURN(request.pod_name, GoString(body, "PodName", where));
  GPULET_ASSIGN_OR_RETURN(request.pod_namespace,
                          GoString(body, "PodNamespace", where));
  GPULET_ASSIGN_OR_RETURN(request.pod_uid, GoString(body, "PodUID", where));
  GPULET_ASSIGN_OR_RETURN(request.node, GoString(body, "Node", where));
  if (request.pod_name.empty())
    return Bad("ExtenderBindingArgs.PodName", "missing");
  if (request.node.empty()) return Bad("ExtenderBindingArgs.Node", "missing");
  if (request.pod_uid.empty())
    return Bad("ExtenderBindingArgs.PodUID", "missing");
  if (request.pod_namespace.empty()) request.pod_namespace = "default";
  GPULET_RETURN_IF_ERROR(
      CheckSubdomain("ExtenderBindingArgs.PodName", request.pod_name));
  GPULET_RETURN_IF_ERROR(
      CheckLabel("ExtenderBindingArgs.PodNamespace", request.pod_namespace));
  GPULET_RETURN_IF_ERROR(
      CheckUid("ExtenderBindingArgs.PodUID", request.pod_uid));
  GPULET_RETURN_IF_ERROR(
      CheckSubdomain("ExtenderBindingArgs.Node", request.node));
  BindOutcome outcome;
  absl::Status s = binder_.Bind(request, &outcome);
  bind_conflicts_->Add({}, outcome.conflicts);
  binds_->Add({s.ok() ? "ok" : "error"});
  return json{{"Error", s.ok() ? "" : std::string(s.message())}};
}

http::Response Extender::Verb(const std::string& verb,
                              const http::Request& request) {
  if (request.method != "POST") {
    return http::TextResponse(405, absl::StrCat(verb, ": use POST"));
  }
  if (TooDeep(request.body, kMaxJsonDepth)) {
    return http::TextResponse(
        400, absl::StrCat(verb, ": the request body nests deeper than ",
                          kMaxJsonDepth, " levels"));
  }
  json body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    return http::TextResponse(
        400, absl::StrCat(verb, ": the request body is not JSON"));
  }
  absl::StatusOr<json> answer = verb == "filter"       ? Filter(body)
                                : verb == "prioritize" ? Prioritize(body)
                                                       : Bind(body);
  if (!answer.ok()) {
    return http::TextResponse(
        400, absl::StrCat(verb, ": ", answer.status().message()));
  }
  return JsonResponse(*answer);
}

http::Response Extender::Handle(const http::Request& request) {
  const auto start = std::chrono::steady_clock::now();
  const std::string verb = request.path.substr(request.path.rfind('/') + 1);
  if (verb == "healthz" || verb == "readyz" || verb == "metrics") {
    if (request.method != "GET") return http::TextResponse(405, "use GET");
    if (verb == "healthz") return http::TextResponse(200, "ok");
    if (verb == "readyz") {
      return cache_.synced()
                 ? http::TextResponse(200, "ok")
                 : http::TextResponse(503, "the node cache has no list yet");
    }
    nodes_->Set({}, static_cast<double>(cache_.size()));
    return http::MetricsResponse(registry_);
  }
  if (verb != "filter" && verb != "prioritize" && verb != "bind") {
    return http::TextResponse(404, "not found");
  }
  http::Response response = Verb(verb, request);
  requests_->Add({verb, absl::StrCat(response.status)});
  request_seconds_->Add({verb}, std::chrono::duration<double>(
                                    std::chrono::steady_clock::now() - start)
                                    .count());
  return response;
}

}  // namespace gpulet::extender
