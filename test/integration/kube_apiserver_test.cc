// The Kubernetes API client (src/net/kube/) against a real kube-apiserver (the
// binary test/cluster/build-k8s builds) over a real etcd, both on
// 127.0.0.1 in a temporary directory, with a CA and certificates made by
// the test. Covers what a fake server can only assume: the API server's
// Status bodies and codes, merge patches of a Node, pod bindings, paged
// lists, field-selected watches, a kubeconfig loaded by config/ and the
// kubectl plugin reading memory-share annotations, also with a kubeconfig
// whose user authenticates through an exec credential plugin.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "src/base/common/file_util.h"
#include "src/cli/kubectl_command.h"
#include "src/model/labels/node_patch.h"
#include "src/net/kube/api_path.h"
#include "src/net/kube/api_status.h"
#include "src/net/kube/client.h"
#include "src/net/kube/kubeconfig.h"
#include "src/net/kube/list_watcher.h"
#include "src/net/kube/tls_transport.h"
#include "src/net/testing/test_tls.h"
#include "src/plugin/daemon/label_publisher.h"
#include "test/integration/apiserver_host.h"

namespace gpulet::kube {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

class KubeApiServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    host_ = new testing::ApiServerHost();
    // Watches go to etcd, so compacting etcd makes old versions Gone.
    skip_ = host_->Start({"--watch-cache=false"});
    if (skip_.empty()) {
      node_cert_ = new tls_test::KeyPair(
          tls_test::MakeLeaf(host_->ca(), "gpulet-test-node", false));
    }
  }

  static void TearDownTestSuite() {
    delete host_;
    host_ = nullptr;
    delete node_cert_;
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    transport_ = Connect(AdminConfig());
    ASSERT_NE(transport_, nullptr);
    client_ =
        std::make_unique<Client>(*transport_, clock_, ClientOptions{.qps = 0});
    WaitReady();
  }

  static config::ApiServerConfig AdminConfig() { return host_->AdminConfig(); }

  static std::unique_ptr<TlsTransport> Connect(
      const config::ApiServerConfig& config) {
    absl::StatusOr<std::unique_ptr<TlsTransport>> t =
        TlsTransport::Create(config);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }

  // Polls /readyz until the server says ok; fails if a server died.
  void WaitReady() {
    if (ready_) return;
    const std::string died = host_->WaitReady(*transport_);
    ASSERT_EQ(died, "");
    // The default service account is made by the controller manager, which
    // does not run here; pods need it to pass admission.
    absl::StatusOr<Json> sa =
        client_->Create("/api/v1/namespaces/default/serviceaccounts",
                        {{"metadata", {{"name", "default"}}}});
    ASSERT_TRUE(sa.ok() ||
                sa.status().code() == absl::StatusCode::kAlreadyExists)
        << sa.status();
    ready_ = true;
  }

  absl::StatusOr<Json> CreatePod(const std::string& name,
                                 const std::string& node) {
    Json spec = {
        {"containers", {{{"name", "c"}, {"image", "registry.invalid/pause"}}}}};
    if (!node.empty()) spec["nodeName"] = node;
    return client_->Create(*PodsPath("default"),
                           {{"apiVersion", "v1"},
                            {"kind", "Pod"},
                            {"metadata", {{"name", name}}},
                            {"spec", spec}});
  }

  static inline std::string skip_;
  static inline testing::ApiServerHost* host_ = nullptr;
  static inline tls_test::KeyPair* node_cert_ = nullptr;
  static inline bool ready_ = false;

  common::RealClock& clock_ = common::RealClock::Get();
  std::unique_ptr<TlsTransport> transport_;
  std::unique_ptr<Client> client_;
};

TEST_F(KubeApiServerTest, NodeCreatePatchAndErrors) {
  const std::string path = *NodePath("gpu-node-1");
  ASSERT_TRUE(
      client_
          ->Create("/api/v1/nodes", {{"apiVersion", "v1"},
                                     {"kind", "Node"},
                                     {"metadata", {{"name", "gpu-node-1"}}}})
          .ok());
  absl::StatusOr<Json> again = client_->Create(
      "/api/v1/nodes", {{"metadata", {{"name", "gpu-node-1"}}}});
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(HttpCode(again.status()), 409);

  absl::StatusOr<Json> node = client_->MergePatch(
      path, {{"metadata",
              {{"annotations", {{"gpulet.dev/free-memory", "0:80Gi"}}},
               {"labels", {{"nvidia.com/gpu.present", "true"}}}}}});
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)["metadata"]["annotations"]["gpulet.dev/free-memory"],
            "0:80Gi");
  // null deletes a key in a merge patch.
  node = client_->MergePatch(
      path,
      {{"metadata", {{"annotations", {{"gpulet.dev/free-memory", nullptr}}}}}});
  ASSERT_TRUE(node.ok()) << node.status();
  node = client_->Get(path);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_FALSE(
      (*node)["metadata"].contains("annotations") &&
      (*node)["metadata"]["annotations"].contains("gpulet.dev/free-memory"));
  EXPECT_EQ((*node)["metadata"]["labels"]["nvidia.com/gpu.present"], "true");

  absl::StatusOr<Json> missing = client_->Get(*NodePath("no-such-node"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("nodes \"no-such-node\" not found"));

  absl::StatusOr<Json> invalid = client_->MergePatch(
      path, {{"metadata", {{"labels", {{"bad label!", "x"}}}}}});
  EXPECT_EQ(invalid.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Reason(invalid.status()), "Invalid");
}

// The node labels' merge patches (daemon/label_publisher.h) as the API
// server applies them: gpulet's labels set and listed, a stale one removed,
// labels gpulet does not own (nvidia.com/ or not) untouched.
TEST_F(KubeApiServerTest, NodeLabelsReplaceOnlyTheirOwn) {
  const std::string path = *NodePath("gpu-node-labels");
  ASSERT_TRUE(
      client_
          ->Create("/api/v1/nodes",
                   {{"apiVersion", "v1"},
                    {"kind", "Node"},
                    {"metadata",
                     {{"name", "gpu-node-labels"},
                      {"labels",
                       {{"team", "a"}, {"nvidia.com/gpu.present", "true"}}}}}})
          .ok());
  daemon::LabelOptions options;
  options.node_name = "gpu-node-labels";
  options.background_patch = false;
  daemon::LabelPublisher publisher(options, client_.get());
  ASSERT_TRUE(publisher
                  .PatchNode({{"nvidia.com/gpu.count", "8"},
                              {"nvidia.com/mig.strategy", "mixed"},
                              {"nvidia.com/gfd.timestamp", "1700000000"}})
                  .ok());
  absl::StatusOr<Json> node = client_->Get(path);
  ASSERT_TRUE(node.ok()) << node.status();
  Json labels = (*node)["metadata"]["labels"];
  EXPECT_EQ(labels["nvidia.com/gpu.count"], "8");
  EXPECT_EQ(labels["nvidia.com/mig.strategy"], "mixed");
  EXPECT_FALSE(labels.contains("nvidia.com/gfd.timestamp"));
  EXPECT_EQ((*node)["metadata"]["annotations"][labels::kOwnedLabelsAnnotation],
            "nvidia.com/gpu.count,nvidia.com/mig.strategy");

  ASSERT_TRUE(publisher.PatchNode({{"nvidia.com/gpu.count", "4"}}).ok());
  node = client_->Get(path);
  ASSERT_TRUE(node.ok()) << node.status();
  labels = (*node)["metadata"]["labels"];
  EXPECT_EQ(labels["nvidia.com/gpu.count"], "4");
  EXPECT_FALSE(labels.contains("nvidia.com/mig.strategy"));
  EXPECT_EQ(labels["team"], "a");
  EXPECT_EQ(labels["nvidia.com/gpu.present"], "true");
  EXPECT_EQ((*node)["metadata"]["annotations"][labels::kOwnedLabelsAnnotation],
            "nvidia.com/gpu.count");
  const std::string version =
      (*node)["metadata"]["resourceVersion"].get<std::string>();
  // Nothing to change: no write.
  ASSERT_TRUE(publisher.PatchNode({{"nvidia.com/gpu.count", "4"}}).ok());
  node = client_->Get(path);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)["metadata"]["resourceVersion"], version);
}

TEST_F(KubeApiServerTest, ClientCertificateAuthenticatesWithoutRights) {
  config::ApiServerConfig config = AdminConfig();
  config.token.clear();
  config.client_cert_pem = node_cert_->cert_pem;
  config.client_key_pem = node_cert_->key_pem;
  std::unique_ptr<TlsTransport> transport = Connect(config);
  common::FakeClock clock;
  Client client(*transport, clock, {.qps = 0});
  absl::StatusOr<Json> node = client.Get(*NodePath("gpu-node-1"));
  EXPECT_EQ(node.status().code(), absl::StatusCode::kPermissionDenied);
  // The server knows who asked: the certificate's common name.
  EXPECT_THAT(node.status().message(), HasSubstr("gpulet-test-node"));

  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  config.token = "not-a-valid-token";
  transport = Connect(config);
  Client anonymous(*transport, clock, {.qps = 0});
  node = anonymous.Get(*NodePath("gpu-node-1"));
  EXPECT_EQ(node.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(node.status().message(),
              ::testing::Not(HasSubstr("not-a-valid-token")));
}

TEST_F(KubeApiServerTest, KubeconfigLoadedByConfigConnects) {
  const std::string path = host_->dir() + "/kubeconfig";
  ASSERT_TRUE(
      common::WriteFileAtomic(
          path,
          absl::StrCat("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                       "clusters:\n- name: c\n  cluster:\n    server: https://"
                       "127.0.0.1:",
                       host_->port(), "\n    certificate-authority: ca.crt\n",
                       "users:\n- name: u\n  user:\n    token: ",
                       testing::ApiServerHost::kAdminToken,
                       "\ncontexts:\n- name: t\n  context: {cluster: c, user: "
                       "u}\n"),
          {.mode = 0600, .durable = false})
          .ok());
  absl::StatusOr<config::ApiServerConfig> config = config::LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  std::unique_ptr<TlsTransport> transport = Connect(*config);
  Client client(*transport, clock_, {.qps = 0});
  absl::StatusOr<Json> ns = client.Get("/api/v1/namespaces/default");
  ASSERT_TRUE(ns.ok()) << ns.status();
  EXPECT_EQ((*ns)["metadata"]["name"], "default");
}

TEST_F(KubeApiServerTest, BindingPagedListAndNodeWatch) {
  ASSERT_TRUE(CreatePod("unbound", "").ok());
  absl::StatusOr<Json> bound = client_->Create(
      *PodBindingPath("default", "unbound"),
      {{"apiVersion", "v1"},
       {"kind", "Binding"},
       {"metadata", {{"name", "unbound"}}},
       {"target",
        {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "gpu-node-2"}}}});
  ASSERT_TRUE(bound.ok()) << bound.status();
  absl::StatusOr<Json> pod = client_->Get(*PodPath("default", "unbound"));
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["spec"]["nodeName"], "gpu-node-2");
  // A pod is bound once.
  absl::StatusOr<Json> twice =
      client_->Create(*PodBindingPath("default", "unbound"),
                      {{"metadata", {{"name", "unbound"}}},
                       {"target", {{"kind", "Node"}, {"name", "gpu-node-3"}}}});
  EXPECT_FALSE(twice.ok());

  for (const char* name : {"p1", "p2"}) {
    ASSERT_TRUE(CreatePod(name, "gpu-node-2").ok());
  }
  ASSERT_TRUE(CreatePod("elsewhere", "other-node").ok());

  // Pages of one pod each, selected by node.
  Client paged(*transport_, clock_, {.qps = 0, .page_size = 1});
  absl::StatusOr<ListResult> list = paged.List(
      *PodsPath(), {.field_selector = PodsOnNodeSelector("gpu-node-2")});
  ASSERT_TRUE(list.ok()) << list.status();
  std::set<std::string> names;
  for (const Json& item : list->items) {
    names.insert(item["metadata"]["name"].get<std::string>());
  }
  EXPECT_EQ(names, (std::set<std::string>{"unbound", "p1", "p2"}));
  EXPECT_FALSE(list->resource_version.empty());

  // A list-watch of the node's pods sees the three, then a new one.
  std::mutex mu;
  std::condition_variable cv;
  std::set<std::string> known;
  bool replaced = false;
  ListWatcher watcher(
      *client_, clock_, *PodsPath(),
      {.field_selector = PodsOnNodeSelector("gpu-node-2")},
      {.on_replace =
           [&](std::vector<Json> items, const std::string&) {
             std::lock_guard lock(mu);
             known.clear();
             for (const Json& item : items) {
               known.insert(item["metadata"]["name"].get<std::string>());
             }
             replaced = true;
             cv.notify_all();
           },
       .on_event =
           [&](const WatchEvent& event) {
             std::lock_guard lock(mu);
             const std::string name =
                 event.object["metadata"]["name"].get<std::string>();
             if (event.type == EventType::kDeleted) {
               known.erase(name);
             } else {
               known.insert(name);
             }
             cv.notify_all();
           }});
  std::jthread thread([&](std::stop_token stop) { (void)watcher.Run(stop); });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return replaced; });
    EXPECT_EQ(known, (std::set<std::string>{"unbound", "p1", "p2"}));
  }
  ASSERT_TRUE(CreatePod("p3", "gpu-node-2").ok());
  ASSERT_TRUE(CreatePod("not-mine", "other-node").ok());
  ASSERT_TRUE(client_
                  ->MergePatch(*PodPath("default", "p1"),
                               {{"metadata", {{"labels", {{"a", "b"}}}}}})
                  .ok());
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return known.count("p3") == 1; });
    EXPECT_EQ(known.count("not-mine"), 0u);
  }
  thread.request_stop();
}

// Compacts etcd's history up to its current revision, through etcd's
// JSON gateway.
void CompactEtcd(int etcd_port) {
  httplib::Client etcd("127.0.0.1", etcd_port);
  auto range =
      etcd.Post("/v3/kv/range", R"({"key":"AA=="})", "application/json");
  ASSERT_TRUE(range && range->status == 200);
  Json header = Json::parse(range->body)["header"];
  const std::string revision = header["revision"].get<std::string>();
  auto compact =
      etcd.Post("/v3/kv/compaction",
                Json{{"revision", revision}, {"physical", true}}.dump(),
                "application/json");
  ASSERT_TRUE(compact && compact->status == 200)
      << (compact ? compact->body : "");
}

TEST_F(KubeApiServerTest, WatchFromAnExpiredVersionIsGone) {
  ASSERT_TRUE(CreatePod("before-compaction", "").ok());
  ASSERT_NO_FATAL_FAILURE(CompactEtcd(host_->etcd_port()));
  absl::Status status = client_->Watch(
      *PodsPath(), {.resource_version = "1", .timeout = absl::Seconds(20)},
      [](const WatchEvent&) { return true; });
  EXPECT_TRUE(IsGone(status)) << status;
}

// `kubectl gpulet status` (src/cli/kubectl_command.h) reading Nodes that
// carry memory-share annotations, through a kubeconfig named by
// $KUBECONFIG with an explicit --context.
TEST_F(KubeApiServerTest, KubectlPluginShowsMemoryShares) {
  const std::string memory =
      R"({"v":1,"resource":"gpulet.dev/gpu-memory","unitMiB":1024,)"
      R"("observed":"2026-11-24T05:01:02Z","gpus":[{"uuid":)"
      R"("GPU-0aaaaaaa-1111","index":0,"units":80,"used":12,"healthy":true},)"
      R"({"uuid":"GPU-1bbbbbbb-2222","index":1,"units":24,"used":0,)"
      R"("healthy":true}],"pods":[{"namespace":"ml","name":"train",)"
      R"("uid":"u1","containers":[{"name":"c","gpu":"GPU-0aaaaaaa-1111",)"
      R"("units":12}]}]})";
  const std::string pending =
      R"({"v":1,"pods":[{"uid":"u2","namespace":"ml","name":"eval",)"
      R"("time":"2026-11-24T05:00:00Z","containers":[{"name":"c","units":4}]}]})";
  auto create = [&](const std::string& name, const Json& annotations) {
    Json metadata = {{"name", name}};
    if (!annotations.empty()) metadata["annotations"] = annotations;
    absl::StatusOr<Json> node = client_->Create(
        "/api/v1/nodes",
        {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", metadata}});
    ASSERT_TRUE(node.ok()) << node.status();
  };
  create("share-1", {{"gpulet.dev/gpu-memory", memory},
                     {"gpulet.dev/gpu-memory-pending", pending}});
  create("share-none", Json::object());
  create("share-bad", {{"gpulet.dev/gpu-memory", "{garbage"}});

  const std::string path = host_->dir() + "/plugin-kubeconfig";
  ASSERT_TRUE(
      common::WriteFileAtomic(
          path,
          absl::StrCat("apiVersion: v1\nkind: Config\ncurrent-context: none\n"
                       "clusters:\n- name: c\n  cluster:\n    server: https://"
                       "127.0.0.1:",
                       host_->port(), "\n    certificate-authority: ca.crt\n",
                       "users:\n- name: u\n  user:\n    token: ",
                       testing::ApiServerHost::kAdminToken,
                       "\ncontexts:\n- name: t\n  context: {cluster: c, user: "
                       "u}\n"),
          {.mode = 0600, .durable = false})
          .ok());
  auto run = [&](std::vector<std::string> args, std::string& out,
                 std::string& err) {
    args.insert(args.end(), {"--context", "t"});
    std::ostringstream o, e;
    const int rc = cli::RunKubectlGpulet(
        args, o, e, [&](const std::string& name) -> std::optional<std::string> {
          if (name == "KUBECONFIG") return path + ":/nonexistent/second";
          return std::nullopt;
        });
    out = o.str();
    err = e.str();
    return rc;
  };
  std::string out, err;
  ASSERT_EQ(run({"status", "share-1"}, out, err), 0) << err;
  EXPECT_EQ(out,
            "NODE     GPU             MEMORY  USED   PENDING  FREE   PODS\n"
            "share-1  0 GPU-0aaaaaaa  80GiB   12GiB  -        68GiB  "
            "ml/train:12GiB\n"
            "share-1  1 GPU-1bbbbbbb  24GiB   0GiB   -        24GiB  -\n"
            "share-1  pending         -       -      4GiB     -      "
            "ml/eval:4GiB\n");

  // Every node: the bad annotation is reported by node name, the others
  // are still shown and the exit code is 0.
  ASSERT_EQ(run({"status"}, out, err), 0) << err;
  EXPECT_THAT(out, HasSubstr("share-1  0 GPU-0aaaaaaa"));
  EXPECT_THAT(out, HasSubstr("node share-none: no memory shares\n"));
  EXPECT_THAT(err,
              HasSubstr("node share-bad: annotation gpulet.dev/gpu-memory"));

  ASSERT_EQ(run({"status", "-o", "json"}, out, err), 0) << err;
  const Json json = Json::parse(out);
  bool found = false;
  for (const Json& node : json["nodes"]) {
    if (node["name"] != "share-1") continue;
    found = true;
    EXPECT_EQ(node["gpus"][0]["uuid"], "GPU-0aaaaaaa-1111");
    EXPECT_EQ(node["gpus"][0]["freeMiB"], 68 * 1024);
    EXPECT_EQ(node["pending"]["memoryMiB"], 4 * 1024);
  }
  EXPECT_TRUE(found) << out;

  EXPECT_EQ(run({"status", "share-bad"}, out, err), 1);
  EXPECT_THAT(err, HasSubstr("node share-bad: annotation"));
  EXPECT_EQ(run({"status", "no-such-node"}, out, err), 1);
  EXPECT_THAT(err, HasSubstr("nodes \"no-such-node\" not found"));
}

// `kubectl gpulet status` with a kubeconfig like EKS's, GKE's and AKS's:
// the user has no token of its own but an exec credential plugin
// (test/integration/exec_credential_plugin.sh) that prints one the API
// server accepts. A plugin answering a token the server refuses fails the
// command with the server's answer.
TEST_F(KubeApiServerTest, KubectlPluginAuthenticatesWithAnExecPlugin) {
  const std::string memory =
      R"({"v":1,"resource":"gpulet.dev/gpu-memory","unitMiB":1024,)"
      R"("observed":"2026-11-24T05:01:02Z","gpus":[{"uuid":)"
      R"("GPU-2ccccccc-3333","index":0,"units":40,"used":0,"healthy":true}],)"
      R"("pods":[]})";
  absl::StatusOr<Json> node = client_->Create(
      "/api/v1/nodes",
      {{"apiVersion", "v1"},
       {"kind", "Node"},
       {"metadata",
        {{"name", "exec-1"},
         {"annotations", {{"gpulet.dev/gpu-memory", memory}}}}}});
  ASSERT_TRUE(node.ok()) << node.status();
  const std::string runs = host_->dir() + "/exec-runs";
  auto kubeconfig = [&](const std::string& token) {
    const std::string path = host_->dir() + "/exec-kubeconfig";
    EXPECT_TRUE(
        common::WriteFileAtomic(
            path,
            absl::StrCat(
                "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                "clusters:\n- name: c\n  cluster:\n    server: https://"
                "127.0.0.1:",
                host_->port(), "\n    certificate-authority: ca.crt\n",
                "users:\n- name: eks-user\n  user:\n    exec:\n",
                "      apiVersion: client.authentication.k8s.io/v1\n",
                "      command: ", GPULET_SOURCE_DIR,
                "/test/integration/exec_credential_plugin.sh\n",
                "      interactiveMode: IfAvailable\n",
                "      provideClusterInfo: true\n", "      env:\n",
                "      - {name: GPULET_TEST_TOKEN, value: ", token, "}\n",
                "      - {name: GPULET_TEST_RUNS, value: ", runs, "}\n",
                "contexts:\n- name: t\n  context: {cluster: c, user: "
                "eks-user}\n"),
            {.mode = 0600, .durable = false})
            .ok());
    return path;
  };
  auto run = [&](const std::string& path, std::string& out, std::string& err) {
    std::ostringstream o, e;
    const int rc = cli::RunKubectlGpulet(
        {"status", "exec-1", "--kubeconfig", path}, o, e,
        [](const std::string&) -> std::optional<std::string> {
          return std::nullopt;
        });
    out = o.str();
    err = e.str();
    return rc;
  };
  std::string out, err;
  ASSERT_EQ(run(kubeconfig(testing::ApiServerHost::kAdminToken), out, err), 0)
      << err;
  EXPECT_THAT(out, ::testing::ContainsRegex("exec-1 +0 GPU-2ccccccc +40GiB"));
  // One run, which was told the cluster it authenticates to.
  absl::StatusOr<std::string> seen = common::ReadFile(runs);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(std::count(seen->begin(), seen->end(), '\n'), 1) << *seen;
  EXPECT_THAT(*seen, HasSubstr(absl::StrCat(R"("server":"https://127.0.0.1:)",
                                            host_->port(), "\"")));

  EXPECT_EQ(run(kubeconfig("refused-token"), out, err), 1);
  EXPECT_THAT(err, HasSubstr("Unauthorized"));
  EXPECT_THAT(err, ::testing::Not(HasSubstr("refused-token")));
}

}  // namespace
}  // namespace gpulet::kube
