// FakeApiServer: a kube::Transport that behaves like the API server for the
// requests the extender makes, over objects in memory: GET of nodes and
// pods, a JSON merge patch of a Node's annotations that honours
// metadata.resourceVersion (409 Conflict when it is not the current one,
// as the real server does), and POST of a pod's binding (201, then 409 for
// a pod already bound). For tests and benchmarks of concurrent binds.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "src/net/kube/transport.h"

namespace gpulet::extender::testing {

class FakeApiServer final : public kube::Transport {
 public:
  void AddNode(nlohmann::json node) {
    absl::MutexLock lock(&mu_);
    node["metadata"]["resourceVersion"] = std::to_string(++version_);
    const std::string name = node["metadata"]["name"].get<std::string>();
    nodes_[name] = std::move(node);
  }
  void AddPod(nlohmann::json pod) {
    absl::MutexLock lock(&mu_);
    const std::string key =
        absl::StrCat(pod["metadata"]["namespace"].get<std::string>(), "/",
                     pod["metadata"]["name"].get<std::string>());
    pods_[key] = std::move(pod);
  }
  nlohmann::json Node(const std::string& name) const {
    absl::MutexLock lock(&mu_);
    return nodes_.at(name);
  }
  // Node name per bound pod ("ns/name").
  std::map<std::string, std::string> bindings() const {
    absl::MutexLock lock(&mu_);
    return bindings_;
  }
  int64_t conflicts() const {
    absl::MutexLock lock(&mu_);
    return conflicts_;
  }

  absl::StatusOr<kube::Response> Do(const kube::Request& request,
                                    std::stop_token = {}) override {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> parts = absl::StrSplit(
        request.path.substr(0, request.path.find('?')), '/', absl::SkipEmpty());
    // api v1 nodes <n> | api v1 namespaces <ns> pods <p> [binding]
    if (parts.size() == 4 && parts[2] == "nodes") {
      auto it = nodes_.find(parts[3]);
      if (it == nodes_.end()) return Status(404, "NotFound", "node not found");
      if (request.method == "GET") return Ok(200, it->second);
      if (request.method == "PATCH") return Patch(it->second, request.body);
    }
    if (parts.size() >= 6 && parts[2] == "namespaces" && parts[4] == "pods") {
      const std::string key = absl::StrCat(parts[3], "/", parts[5]);
      auto it = pods_.find(key);
      if (it == pods_.end()) return Status(404, "NotFound", "pod not found");
      if (parts.size() == 6 && request.method == "GET") {
        return Ok(200, it->second);
      }
      if (parts.size() == 7 && parts[6] == "binding" &&
          request.method == "POST") {
        if (bindings_.contains(key)) {
          return Status(409, "Conflict", "pod is already assigned to a node");
        }
        const nlohmann::json body = nlohmann::json::parse(request.body);
        bindings_[key] = body["target"]["name"].get<std::string>();
        it->second["spec"]["nodeName"] = bindings_[key];
        return Ok(201, {{"kind", "Status"}, {"status", "Success"}});
      }
    }
    return Status(404, "NotFound", "no such path in the fake");
  }

  absl::StatusOr<kube::Response> Stream(const kube::Request&,
                                        const kube::ChunkFn&,
                                        std::stop_token) override {
    return absl::UnimplementedError("the fake API server does not watch");
  }

 private:
  static kube::Response Ok(int code, const nlohmann::json& body) {
    return {.status = code, .body = body.dump(), .retry_after = ""};
  }
  static kube::Response Status(int code, const std::string& reason,
                               const std::string& message) {
    return {.status = code,
            .body = nlohmann::json{{"kind", "Status"},
                                   {"status", "Failure"},
                                   {"reason", reason},
                                   {"message", message},
                                   {"code", code}}
                        .dump(),
            .retry_after = ""};
  }

  kube::Response Patch(nlohmann::json& node, const std::string& body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const nlohmann::json patch = nlohmann::json::parse(body);
    const nlohmann::json& meta = patch["metadata"];
    if (meta.contains("resourceVersion") &&
        meta["resourceVersion"] != node["metadata"]["resourceVersion"]) {
      ++conflicts_;
      return Status(409, "Conflict",
                    "the object has been modified; please apply your changes "
                    "to the latest version and try again");
    }
    if (meta.contains("annotations")) {
      for (auto it = meta["annotations"].begin();
           it != meta["annotations"].end(); ++it) {
        if (it->is_null()) {
          node["metadata"]["annotations"].erase(it.key());
        } else {
          node["metadata"]["annotations"][it.key()] = *it;
        }
      }
    }
    node["metadata"]["resourceVersion"] = std::to_string(++version_);
    return Ok(200, node);
  }

  mutable absl::Mutex mu_;
  int64_t version_ ABSL_GUARDED_BY(mu_) = 100;
  int64_t conflicts_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, nlohmann::json> nodes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, nlohmann::json> pods_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> bindings_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::extender::testing
