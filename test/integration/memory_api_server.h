// The fake API server of the memory-share daemon tests: HTTPS on
// 127.0.0.1 with a CA of its own, one Node (n1) with its memory-share
// annotations, pods by name and a quiet pod watch. Test-only; header-only.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "src/model/sharing/annotations.h"
#include "src/net/testing/test_tls.h"

namespace gpulet::testing {

inline constexpr absl::Duration kTimeout = absl::Seconds(30);

// An API server that knows one Node (n1) and answers what the node agent
// asks: the Node (GET, PATCH with a resourceVersion check), pods by name,
// and a pod list/watch that stays open until the server stops. Hold()
// makes it hold every request for the Node, unanswered, until Release()
// or its end, as an API server that does not answer.
class FakeApiServer {
 public:
  FakeApiServer() {
    ca_ = kube::tls_test::MakeCa("test-ca");
    kube::tls_test::KeyPair leaf =
        kube::tls_test::MakeLeaf(ca_, "apiserver", /*server=*/true);
    server_ = std::make_unique<httplib::SSLServer>(
        kube::tls_test::ReadCert(leaf.cert_pem).get(),
        kube::tls_test::ReadKey(leaf.key_pem).get());
    Routes();
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
  }
  ~FakeApiServer() {
    {
      std::lock_guard lock(watch_mu_);
      stopping_ = true;
      holding_ = false;
    }
    watch_cv_.notify_all();
    server_->stop();
    thread_.join();
  }

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }

  void Hold() {
    std::lock_guard lock(watch_mu_);
    holding_ = true;
  }
  void Release() {
    {
      std::lock_guard lock(watch_mu_);
      holding_ = false;
    }
    watch_cv_.notify_all();
  }
  // Whether `n` requests for the Node were held, waiting up to kTimeout.
  bool WaitHeld(int n) {
    std::unique_lock lock(watch_mu_);
    return watch_cv_.wait_for(lock, absl::ToChronoSeconds(kTimeout),
                              [&] { return held_ >= n; });
  }

  std::string Kubeconfig() const {
    return absl::StrCat(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
        "    server: https://127.0.0.1:",
        port_,
        "\n    certificate-authority-data: ", absl::Base64Escape(ca_.cert_pem),
        "\nusers:\n- name: u\n  user:\n    token: test-token\ncontexts:\n"
        "- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n");
  }

  void SetPending(const std::string& value) {
    absl::MutexLock lock(&mu_);
    annotations_[std::string(sharing::kPendingAnnotation)] = value;
    ++version_;
  }
  void AddPod(const std::string& name, const std::string& uid) {
    absl::MutexLock lock(&mu_);
    pods_[name] = uid;
  }
  // The node annotation, once `pred` holds for it.
  std::optional<sharing::NodeMemory> WaitForNode(
      const std::function<bool(const sharing::NodeMemory&)>& pred) {
    absl::MutexLock lock(&mu_);
    std::optional<sharing::NodeMemory> found;
    auto check = [&]() {
      mu_.AssertHeld();
      auto it = annotations_.find(std::string(sharing::kNodeAnnotation));
      if (it == annotations_.end()) return false;
      absl::StatusOr<sharing::NodeMemory> node =
          sharing::ParseNodeMemory(it->second);
      if (!node.ok() || !pred(*node)) return false;
      found = *node;
      return true;
    };
    mu_.AwaitWithTimeout(absl::Condition(&check), kTimeout);
    return found;
  }
  // Waits until the annotation `key` satisfies `pred`.
  bool WaitForAnnotation(std::string_view key,
                         const std::function<bool(const std::string&)>& pred) {
    absl::MutexLock lock(&mu_);
    auto check = [&]() {
      mu_.AssertHeld();
      auto it = annotations_.find(std::string(key));
      return pred(it == annotations_.end() ? "" : it->second);
    };
    return mu_.AwaitWithTimeout(absl::Condition(&check), kTimeout);
  }
  std::string Annotation(std::string_view key) {
    absl::MutexLock lock(&mu_);
    auto it = annotations_.find(std::string(key));
    return it == annotations_.end() ? "" : it->second;
  }

 private:
  nlohmann::json NodeObject() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    nlohmann::json node = {
        {"kind", "Node"},
        {"apiVersion", "v1"},
        {"metadata",
         {{"name", "n1"}, {"resourceVersion", std::to_string(version_)}}}};
    for (const auto& [k, v] : annotations_) {
      node["metadata"]["annotations"][k] = v;
    }
    return node;
  }

  // Holds a request for the Node while holding.
  void WaitWhileHeld() {
    std::unique_lock lock(watch_mu_);
    if (!holding_) return;
    ++held_;
    watch_cv_.notify_all();
    watch_cv_.wait(lock, [this] { return !holding_; });
  }

  void Routes() {
    server_->Get("/api/v1/nodes/n1",
                 [this](const httplib::Request&, httplib::Response& res) {
                   WaitWhileHeld();
                   absl::MutexLock lock(&mu_);
                   res.set_content(NodeObject().dump(), "application/json");
                 });
    server_->Patch("/api/v1/nodes/n1", [this](const httplib::Request& req,
                                              httplib::Response& res) {
      WaitWhileHeld();
      nlohmann::json patch = nlohmann::json::parse(req.body, nullptr, false);
      absl::MutexLock lock(&mu_);
      if (patch.is_discarded() ||
          patch["metadata"]["resourceVersion"] != std::to_string(version_)) {
        res.status = 409;
        res.set_content(
            R"({"kind":"Status","reason":"Conflict","code":409,"message":"the object has been modified"})",
            "application/json");
        return;
      }
      for (const auto& [k, v] : patch["metadata"]["annotations"].items()) {
        if (v.is_null()) {
          annotations_.erase(k);
        } else {
          annotations_[k] = v.get<std::string>();
        }
      }
      ++version_;
      res.set_content(NodeObject().dump(), "application/json");
    });
    server_->Get(R"(/api/v1/namespaces/ns/pods/([a-z0-9-]+))",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   absl::MutexLock lock(&mu_);
                   auto it = pods_.find(req.matches[1].str());
                   if (it == pods_.end()) {
                     res.status = 404;
                     res.set_content(
                         R"({"kind":"Status","reason":"NotFound","code":404})",
                         "application/json");
                     return;
                   }
                   res.set_content(
                       nlohmann::json{{"metadata", {{"uid", it->second}}},
                                      {"spec", {{"nodeName", "n1"}}},
                                      {"status", {{"phase", "Pending"}}}}
                           .dump(),
                       "application/json");
                 });
    server_->Get("/api/v1/pods", [this](const httplib::Request& req,
                                        httplib::Response& res) {
      if (!req.has_param("watch")) {
        // ns/x, whose uid PodResources does not tell.
        res.set_content(
            R"({"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[)"
            R"({"metadata":{"namespace":"ns","name":"x","uid":"u-x"}}]})",
            "application/json");
        return;
      }
      // Open until the server stops, as a quiet watch is.
      res.set_chunked_content_provider(
          "application/json", [this](size_t, httplib::DataSink& sink) {
            std::unique_lock lock(watch_mu_);
            watch_cv_.wait(lock, [this] { return stopping_; });
            sink.done();
            return true;
          });
    });
  }

  kube::tls_test::KeyPair ca_;
  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = -1;
  std::thread thread_;
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool stopping_ = false;
  bool holding_ = false;
  int held_ = 0;
  absl::Mutex mu_;
  int version_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, std::string> annotations_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> pods_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::testing
