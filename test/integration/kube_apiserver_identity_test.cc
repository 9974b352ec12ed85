// The API client's identity and list parameters against a real
// kube-apiserver (apiserver_host.h), with RBAC and an audit log: a
// kubeconfig's impersonation fields make the server act as the impersonated
// user (what `kubectl auth whoami` shows, through SelfSubjectReview), and
// ListWatcher's first list asks for resourceVersion=0 (the watch cache).
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"
#include "src/net/kube/api_status.h"
#include "src/net/kube/client.h"
#include "src/net/kube/kubeconfig.h"
#include "src/net/kube/list_watcher.h"
#include "src/net/kube/tls_transport.h"
#include "src/net/testing/test_tls.h"
#include "test/integration/apiserver_host.h"

namespace gpulet::kube {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr char kAuditPolicy[] = R"(apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  resources: [{group: "", resources: [pods]}]
- level: None
)";

constexpr char kSelfSubjectReviews[] =
    "/apis/authentication.k8s.io/v1/selfsubjectreviews";

class KubeIdentityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/kid.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    Write("audit-policy.yaml", kAuditPolicy);
    host_ = new testing::ApiServerHost();
    skip_ = host_->Start({"--audit-policy-file", dir_ + "/audit-policy.yaml",
                          "--audit-log-path", dir_ + "/audit.log"});
  }

  static void TearDownTestSuite() {
    delete host_;
    host_ = nullptr;
    std::filesystem::remove_all(dir_);
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    admin_transport_ = Connect(host_->AdminConfig());
    ASSERT_NE(admin_transport_, nullptr);
    admin_ = std::make_unique<Client>(*admin_transport_, clock_,
                                      ClientOptions{.qps = 0});
    ASSERT_EQ(host_->WaitReady(*admin_transport_), "");
  }

  static std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(
        common::WriteFileAtomic(path, text, {.mode = 0600, .durable = false})
            .ok());
    return path;
  }

  static std::unique_ptr<TlsTransport> Connect(
      const config::ApiServerConfig& config) {
    absl::StatusOr<std::unique_ptr<TlsTransport>> t =
        TlsTransport::Create(config);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }

  void MustCreate(const std::string& path, const Json& body) {
    absl::StatusOr<Json> made = admin_->Create(path, body);
    ASSERT_TRUE(made.ok()) << made.status();
  }

  // A ClusterRole with `rules`, bound to the user `user`.
  void Grant(const std::string& name, const Json& rules,
             const std::string& user) {
    const std::string rbac = "/apis/rbac.authorization.k8s.io/v1/";
    MustCreate(rbac + "clusterroles",
               {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                {"kind", "ClusterRole"},
                {"metadata", {{"name", name}}},
                {"rules", rules}});
    MustCreate(rbac + "clusterrolebindings",
               {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                {"kind", "ClusterRoleBinding"},
                {"metadata", {{"name", name}}},
                {"roleRef",
                 {{"apiGroup", "rbac.authorization.k8s.io"},
                  {"kind", "ClusterRole"},
                  {"name", name}}},
                {"subjects",
                 {{{"apiGroup", "rbac.authorization.k8s.io"},
                   {"kind", "User"},
                   {"name", user}}}}});
  }

  // Who the server says `client` is.
  static absl::StatusOr<Json> WhoAmI(Client& client) {
    absl::StatusOr<Json> review = client.Create(
        kSelfSubjectReviews, {{"apiVersion", "authentication.k8s.io/v1"},
                              {"kind", "SelfSubjectReview"}});
    if (!review.ok()) return review.status();
    return (*review)["status"]["userInfo"];
  }

  static inline std::string dir_;
  static inline std::string skip_;
  static inline testing::ApiServerHost* host_ = nullptr;

  common::RealClock& clock_ = common::RealClock::Get();
  std::unique_ptr<TlsTransport> admin_transport_;
  std::unique_ptr<Client> admin_;
};

// A node's client certificate may only impersonate; listing pods is jane's
// right. Through the kubeconfig's as/as-groups/as-uid/as-user-extra the
// list succeeds and the server names jane; without them it refuses the
// certificate's own name.
TEST_F(KubeIdentityTest, ImpersonatedUserListsAndIsWhoTheServerSees) {
  Grant("gpulet-test-impersonator",
        {{{"apiGroups", {""}},
          {"resources", {"users", "groups"}},
          {"verbs", {"impersonate"}}},
         {{"apiGroups", {"authentication.k8s.io"}},
          {"resources", {"uids", "userextras/team"}},
          {"verbs", {"impersonate"}}}},
        "gpulet-identity-node");
  Grant("gpulet-test-pod-reader",
        {{{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"list"}}}},
        "jane");
  const tls_test::KeyPair node =
      tls_test::MakeLeaf(host_->ca(), "gpulet-identity-node", false);
  Write("node.crt", node.cert_pem);
  Write("node.key", node.key_pem);
  auto kubeconfig = [&](const std::string& name, const std::string& as) {
    return Write(
        name,
        absl::StrCat("current-context: t\nclusters:\n- name: c\n  cluster:\n"
                     "    server: https://127.0.0.1:",
                     host_->port(), "\n    certificate-authority-data: ",
                     absl::Base64Escape(host_->ca().cert_pem),
                     "\nusers:\n- name: u\n  user:\n"
                     "    client-certificate: node.crt\n"
                     "    client-key: node.key\n",
                     as,
                     "contexts:\n- name: t\n  context: {cluster: c, user: "
                     "u}\n"));
  };
  absl::StatusOr<config::ApiServerConfig> as_jane = config::LoadKubeconfig(
      kubeconfig("jane.kubeconfig",
                 "    as: jane\n    as-uid: uid-42\n    as-groups: [devs]\n"
                 "    as-user-extra: {team: [gpu]}\n"));
  ASSERT_TRUE(as_jane.ok()) << as_jane.status();
  absl::StatusOr<config::ApiServerConfig> as_node =
      config::LoadKubeconfig(kubeconfig("node.kubeconfig", ""));
  ASSERT_TRUE(as_node.ok()) << as_node.status();

  std::unique_ptr<TlsTransport> jane_transport = Connect(*as_jane);
  std::unique_ptr<TlsTransport> node_transport = Connect(*as_node);
  Client jane(*jane_transport, clock_, {.qps = 0});
  Client node_client(*node_transport, clock_, {.qps = 0});

  absl::StatusOr<ListResult> listed = jane.List("/api/v1/pods", {});
  EXPECT_TRUE(listed.ok()) << listed.status();
  absl::StatusOr<ListResult> refused = node_client.List("/api/v1/pods", {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.status().message(), HasSubstr("gpulet-identity-node"));

  absl::StatusOr<Json> who = WhoAmI(jane);
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ((*who)["username"], "jane");
  EXPECT_EQ((*who)["uid"], "uid-42");
  EXPECT_THAT((*who)["groups"], Contains("devs"));
  EXPECT_EQ((*who)["extra"]["team"], Json::array({"gpu"}));
  who = WhoAmI(node_client);
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ((*who)["username"], "gpulet-identity-node");
}

// The audit log's requestURI of every pods request, in order, once the
// line holding `marker` is there.
std::vector<std::string> AuditedPodRequests(const std::string& path,
                                            const std::string& marker) {
  for (;;) {
    absl::StatusOr<std::string> log = common::ReadFile(path, 64 << 20);
    if (log.ok() && log->find(marker) != std::string::npos) {
      std::vector<std::string> uris;
      for (absl::string_view line : absl::StrSplit(*log, '\n')) {
        Json event = Json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (event.is_object() && event.contains("requestURI")) {
          uris.push_back(event["requestURI"].get<std::string>());
        }
      }
      return uris;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

TEST_F(KubeIdentityTest, FirstListAsksForAnyVersion) {
  bool replaced = false;
  std::stop_source stop;
  ListWatcher watcher(
      *admin_, clock_, "/api/v1/pods",
      {.label_selector = "gpulet-test=first-list"},
      {.on_replace = [&](std::vector<Json>, const std::string&) {
        replaced = true;
        stop.request_stop();
      }});
  EXPECT_EQ(watcher.Run(stop.get_token()).code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(replaced);
  const std::string selector = "labelSelector=gpulet-test%3Dfirst-list";
  std::vector<std::string> uris =
      AuditedPodRequests(dir_ + "/audit.log", selector);
  std::vector<std::string> lists;
  for (const std::string& uri : uris) {
    if (uri.find(selector) != std::string::npos) lists.push_back(uri);
  }
  ASSERT_EQ(lists.size(), 1u) << ::testing::PrintToString(uris);
  EXPECT_THAT(lists[0], HasSubstr("resourceVersion=0"));
  EXPECT_THAT(lists[0], ::testing::Not(HasSubstr("watch=true")));
}

}  // namespace
}  // namespace gpulet::kube
