// The Kubernetes API client (src/kube/) against a real kube-apiserver (the
// binary test/cluster/build-k8s builds) over a real etcd, both on
// 127.0.0.1 in a temporary directory, with a CA and certificates made by
// the test. Covers what a fake server can only assume: the API server's
// Status bodies and codes, merge patches of a Node, pod bindings, paged
// lists, field-selected watches, a kubeconfig loaded by config/ and the
// kubectl plugin reading memory-share annotations.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

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
#include "src/cli/kubectl_command.h"
#include "src/common/file_util.h"
#include "src/config/kubeconfig.h"
#include "src/daemon/label_publisher.h"
#include "src/kube/api_path.h"
#include "src/kube/api_status.h"
#include "src/kube/client.h"
#include "src/kube/curl_transport.h"
#include "src/kube/list_watcher.h"
#include "src/kube/test_tls.h"
#include "src/labels/node_patch.h"

namespace gpulet::kube {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr char kAdminToken[] = "admin-token-for-the-test";

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A server process with its output in a log file; killed by PID and reaped
// when destroyed.
class Server {
 public:
  Server(const std::vector<std::string>& argv, const std::string& log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> args;
      for (const std::string& a : argv) {
        args.push_back(const_cast<char*>(a.c_str()));
      }
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Server() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  bool Running() const {
    return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0;
  }

 private:
  pid_t pid_ = -1;
};

std::string K8sBinDir() {
  std::string cmd = std::string(GPULET_SOURCE_DIR) +
                    "/test/cluster/build-k8s --check 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  char buf[4096] = {};
  size_t n = ::fread(buf, 1, sizeof(buf) - 1, p);
  int rc = ::pclose(p);
  if (rc != 0) return "";
  return std::string(absl::StripAsciiWhitespace(std::string(buf, n)));
}

class KubeApiServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string bin = K8sBinDir();
    if (bin.empty() || !std::filesystem::exists("/usr/bin/etcd")) {
      skip_ = "kube-apiserver (test/cluster/build-k8s) or etcd not installed";
      return;
    }
    char tmpl[] = "/tmp/kapi.XXXXXX";
    dir_ = new std::string(::mkdtemp(tmpl));
    const std::string& d = *dir_;
    ca_ = new tls_test::KeyPair(tls_test::MakeCa("kapi-ca"));
    tls_test::KeyPair serving = tls_test::MakeLeaf(*ca_, "apiserver", true);
    node_cert_ = new tls_test::KeyPair(
        tls_test::MakeLeaf(*ca_, "gpulet-test-node", false));
    auto write = [&](const std::string& name, const std::string& text) {
      EXPECT_TRUE(common::WriteFileAtomic(d + "/" + name, text,
                                          {.mode = 0600, .durable = false})
                      .ok());
      return d + "/" + name;
    };
    const std::string ca_file = write("ca.crt", ca_->cert_pem);
    const std::string crt = write("apiserver.crt", serving.cert_pem);
    const std::string key = write("apiserver.key", serving.key_pem);
    const std::string sa_key = tls_test::MakeCa("sa").key_pem;
    const std::string sa = write("sa.key", sa_key);
    const std::string sa_pub = write("sa.pub", tls_test::PublicKeyPem(sa_key));
    const std::string tokens = write(
        "tokens.csv",
        absl::StrCat(kAdminToken, ",test-admin,1,\"system:masters\"\n"));

    const int etcd_port = FreePort(), peer_port = FreePort();
    etcd_port_ = etcd_port;
    port_ = FreePort();
    const std::string etcd_url = absl::StrCat("http://127.0.0.1:", etcd_port);
    const std::string peer_url = absl::StrCat("http://127.0.0.1:", peer_port);
    etcd_ = new Server(
        {"/usr/bin/etcd", "--name", "t", "--data-dir", d + "/etcd",
         "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
         "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls",
         peer_url, "--initial-cluster", "t=" + peer_url,
         "--listen-metrics-urls", "", "--unsafe-no-fsync"},
        d + "/etcd.log");
    apiserver_ = new Server(
        {bin + "/kube-apiserver", "--etcd-servers", etcd_url,
         "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
         "--secure-port", absl::StrCat(port_), "--service-cluster-ip-range",
         "10.96.0.0/24", "--authorization-mode", "RBAC", "--client-ca-file",
         ca_file, "--tls-cert-file", crt, "--tls-private-key-file", key,
         "--token-auth-file", tokens, "--service-account-issuer",
         "https://kubernetes.default.svc", "--service-account-key-file", sa_pub,
         "--service-account-signing-key-file", sa, "--cert-dir",
         d + "/generated", "--profiling=false",
         // Watches go to etcd, so compacting etcd makes old versions Gone.
         "--watch-cache=false"},
        d + "/apiserver.log");
  }

  static void TearDownTestSuite() {
    delete apiserver_;
    delete etcd_;
    if (dir_ != nullptr) std::filesystem::remove_all(*dir_);
    delete dir_;
    delete ca_;
    delete node_cert_;
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    transport_ = Connect(AdminConfig());
    ASSERT_NE(transport_, nullptr);
    client_ = std::make_unique<Client>(*transport_, clock_, sleeper_,
                                       ClientOptions{.qps = 0});
    WaitReady();
  }

  static config::ApiServerConfig AdminConfig() {
    config::ApiServerConfig config;
    config.server = absl::StrCat("https://127.0.0.1:", port_);
    config.ca_pem = ca_->cert_pem;
    config.token = kAdminToken;
    config.source = "test";
    return config;
  }

  static std::unique_ptr<CurlTransport> Connect(
      const config::ApiServerConfig& config) {
    absl::StatusOr<std::unique_ptr<CurlTransport>> t =
        CurlTransport::Create(config);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }

  // Polls /readyz until the server says ok; fails if a server died.
  void WaitReady() {
    if (ready_) return;
    for (;;) {
      ASSERT_TRUE(etcd_->Running()) << Log("etcd.log");
      ASSERT_TRUE(apiserver_->Running()) << Log("apiserver.log");
      absl::StatusOr<Response> r = transport_->Do({.path = "/readyz"});
      if (r.ok() && r->status == 200) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    // The default service account is made by the controller manager, which
    // does not run here; pods need it to pass admission.
    absl::StatusOr<Json> sa = client_->Create(
        "/api/v1/namespaces/default/serviceaccounts",
        {{"metadata", {{"name", "default"}}}});
    ASSERT_TRUE(sa.ok() ||
                sa.status().code() == absl::StatusCode::kAlreadyExists)
        << sa.status();
    ready_ = true;
  }

  static std::string Log(const std::string& name) {
    absl::StatusOr<std::string> text = common::ReadFile(*dir_ + "/" + name);
    if (!text.ok()) return "";
    return text->size() > 3000 ? text->substr(text->size() - 3000) : *text;
  }

  absl::StatusOr<Json> CreatePod(const std::string& name,
                                 const std::string& node) {
    Json spec = {{"containers",
                  {{{"name", "c"}, {"image", "registry.invalid/pause"}}}}};
    if (!node.empty()) spec["nodeName"] = node;
    return client_->Create(*PodsPath("default"),
                           {{"apiVersion", "v1"},
                            {"kind", "Pod"},
                            {"metadata", {{"name", name}}},
                            {"spec", spec}});
  }

  static inline std::string skip_;
  static inline std::string* dir_ = nullptr;
  static inline tls_test::KeyPair* ca_ = nullptr;
  static inline tls_test::KeyPair* node_cert_ = nullptr;
  static inline Server* etcd_ = nullptr;
  static inline Server* apiserver_ = nullptr;
  static inline int port_ = 0;
  static inline int etcd_port_ = 0;
  static inline bool ready_ = false;

  common::RealClock& clock_ = common::RealClock::Get();
  RealSleeper& sleeper_ = RealSleeper::Get();
  std::unique_ptr<CurlTransport> transport_;
  std::unique_ptr<Client> client_;
};

TEST_F(KubeApiServerTest, NodeCreatePatchAndErrors) {
  const std::string path = *NodePath("gpu-node-1");
  ASSERT_TRUE(client_
                  ->Create("/api/v1/nodes",
                           {{"apiVersion", "v1"},
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
      path, {{"metadata", {{"annotations", {{"gpulet.dev/free-memory",
                                             nullptr}}}}}});
  ASSERT_TRUE(node.ok()) << node.status();
  node = client_->Get(path);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_FALSE((*node)["metadata"].contains("annotations") &&
               (*node)["metadata"]["annotations"].contains(
                   "gpulet.dev/free-memory"));
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
  ASSERT_TRUE(client_
                  ->Create("/api/v1/nodes",
                           {{"apiVersion", "v1"},
                            {"kind", "Node"},
                            {"metadata",
                             {{"name", "gpu-node-labels"},
                              {"labels",
                               {{"team", "a"},
                                {"nvidia.com/gpu.present", "true"}}}}}})
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
  std::unique_ptr<CurlTransport> transport = Connect(config);
  common::FakeClock clock;
  FakeSleeper sleeper(clock);
  Client client(*transport, clock, sleeper, {.qps = 0});
  absl::StatusOr<Json> node = client.Get(*NodePath("gpu-node-1"));
  EXPECT_EQ(node.status().code(), absl::StatusCode::kPermissionDenied);
  // The server knows who asked: the certificate's common name.
  EXPECT_THAT(node.status().message(), HasSubstr("gpulet-test-node"));

  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  config.token = "not-a-valid-token";
  transport = Connect(config);
  Client anonymous(*transport, clock, sleeper, {.qps = 0});
  node = anonymous.Get(*NodePath("gpu-node-1"));
  EXPECT_EQ(node.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(node.status().message(),
              ::testing::Not(HasSubstr("not-a-valid-token")));
}

TEST_F(KubeApiServerTest, KubeconfigLoadedByConfigConnects) {
  const std::string path = *dir_ + "/kubeconfig";
  ASSERT_TRUE(common::WriteFileAtomic(
                  path,
                  absl::StrCat(
                      "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                      "clusters:\n- name: c\n  cluster:\n    server: https://"
                      "127.0.0.1:",
                      port_, "\n    certificate-authority: ca.crt\n",
                      "users:\n- name: u\n  user:\n    token: ", kAdminToken,
                      "\ncontexts:\n- name: t\n  context: {cluster: c, user: "
                      "u}\n"),
                  {.mode = 0600, .durable = false})
                  .ok());
  absl::StatusOr<config::ApiServerConfig> config =
      config::LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  std::unique_ptr<CurlTransport> transport = Connect(*config);
  Client client(*transport, clock_, sleeper_, {.qps = 0});
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
       {"target", {{"apiVersion", "v1"}, {"kind", "Node"},
                   {"name", "gpu-node-2"}}}});
  ASSERT_TRUE(bound.ok()) << bound.status();
  absl::StatusOr<Json> pod = client_->Get(*PodPath("default", "unbound"));
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["spec"]["nodeName"], "gpu-node-2");
  // A pod is bound once.
  absl::StatusOr<Json> twice = client_->Create(
      *PodBindingPath("default", "unbound"),
      {{"metadata", {{"name", "unbound"}}},
       {"target", {{"kind", "Node"}, {"name", "gpu-node-3"}}}});
  EXPECT_FALSE(twice.ok());

  for (const char* name : {"p1", "p2"}) {
    ASSERT_TRUE(CreatePod(name, "gpu-node-2").ok());
  }
  ASSERT_TRUE(CreatePod("elsewhere", "other-node").ok());

  // Pages of one pod each, selected by node.
  Client paged(*transport_, clock_, sleeper_, {.qps = 0, .page_size = 1});
  absl::StatusOr<ListResult> list =
      paged.List(*PodsPath(),
                 {.field_selector = PodsOnNodeSelector("gpu-node-2")});
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
      *client_, sleeper_, *PodsPath(),
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
  ASSERT_TRUE(client_->MergePatch(*PodPath("default", "p1"),
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
  auto range = etcd.Post("/v3/kv/range", R"({"key":"AA=="})",
                         "application/json");
  ASSERT_TRUE(range && range->status == 200);
  Json header = Json::parse(range->body)["header"];
  const std::string revision = header["revision"].get<std::string>();
  auto compact = etcd.Post(
      "/v3/kv/compaction",
      Json{{"revision", revision}, {"physical", true}}.dump(),
      "application/json");
  ASSERT_TRUE(compact && compact->status == 200)
      << (compact ? compact->body : "");
}

TEST_F(KubeApiServerTest, WatchFromAnExpiredVersionIsGone) {
  ASSERT_TRUE(CreatePod("before-compaction", "").ok());
  ASSERT_NO_FATAL_FAILURE(CompactEtcd(etcd_port_));
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

  const std::string path = *dir_ + "/plugin-kubeconfig";
  ASSERT_TRUE(common::WriteFileAtomic(
                  path,
                  absl::StrCat(
                      "apiVersion: v1\nkind: Config\ncurrent-context: none\n"
                      "clusters:\n- name: c\n  cluster:\n    server: https://"
                      "127.0.0.1:",
                      port_, "\n    certificate-authority: ca.crt\n",
                      "users:\n- name: u\n  user:\n    token: ", kAdminToken,
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
  EXPECT_THAT(err, HasSubstr("node share-bad: annotation gpulet.dev/gpu-memory"));

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

}  // namespace
}  // namespace gpulet::kube
