// `gpulet labels` writing node-feature-discovery's NodeFeature object
// (docs/labels.md) to a real kube-apiserver of the pinned version with
// node-feature-discovery's own CRD installed (deploy/nfd/), under
// deploy/'s RBAC and admission policy (daemonset.yaml, node-policy.yaml),
// as the node agent's bound service-account token: the object is created
// with exactly the labels the feature file gets, updated (a label no longer
// computed gone) when the configuration changes, and the agent is refused
// another node's object, a label outside nvidia.com/, and another
// namespace. Without the CRD, `gpulet labels` falls back to the file.
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/clock.h"
#include "src/base/common/file_util.h"
#include "src/base/config/yaml_json.h"
#include "src/model/labels/node_feature.h"
#include "src/net/kube/client.h"
#include "test/integration/apiserver_host.h"

namespace gpulet {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using Labels = std::map<std::string, std::string>;

constexpr char kNodeFeatures[] =
    "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/kube-system/nodefeatures";
constexpr char kDenied[] = "may write only the NodeFeature";

using ApiClient = testing::ApiServerClient;

struct Outcome {
  int code = -1;
  std::string err;
};

class LabelsApiServerTest : public testing::ApiServerSuite {
 protected:
  void SetUp() override {
    ApiServerSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    char tmpl[] = "/tmp/gpulet-nf-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (dir_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  ApiClient Connect(const std::string& token) {
    return testing::ConnectTo(*host_, token);
  }

  // Creates every object of deploy/<file> as written, the namespaced ones
  // in kube-system; objects that exist already (a second test) are kept.
  void Apply(const std::string& file) {
    const std::string path = std::string(GPULET_SOURCE_DIR) + "/deploy/" + file;
    absl::StatusOr<std::string> text = common::ReadFile(path);
    ASSERT_TRUE(text.ok()) << text.status();
    const std::string ns = "/namespaces/kube-system/";
    const std::map<std::string, std::string> paths = {
        {"ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles"},
        {"ClusterRoleBinding",
         "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"},
        {"Role", "/apis/rbac.authorization.k8s.io/v1" + ns + "roles"},
        {"RoleBinding",
         "/apis/rbac.authorization.k8s.io/v1" + ns + "rolebindings"},
        {"DaemonSet", "/apis/apps/v1" + ns + "daemonsets"},
        {"ServiceAccount", "/api/v1" + ns + "serviceaccounts"},
        {"CustomResourceDefinition",
         "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"},
        {"ValidatingAdmissionPolicy",
         "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"},
        {"ValidatingAdmissionPolicyBinding",
         "/apis/admissionregistration.k8s.io/v1/"
         "validatingadmissionpolicybindings"},
    };
    for (absl::string_view doc : absl::StrSplit(*text, "\n---\n")) {
      absl::StatusOr<nlohmann::ordered_json> object =
          config::YamlToJson(doc, path);
      ASSERT_TRUE(object.ok()) << path << ": " << object.status();
      if (!object->is_object() || !object->contains("kind")) continue;
      const std::string kind = (*object)["kind"];
      ASSERT_TRUE(paths.contains(kind)) << path << ": " << kind;
      absl::StatusOr<Json> made =
          admin_.client->Create(paths.at(kind), Json::parse(object->dump()));
      if (made.status().code() == absl::StatusCode::kAlreadyExists) continue;
      ASSERT_TRUE(made.ok()) << path << ": " << made.status();
    }
  }

  // The CRD, deploy/'s objects, and two Nodes; then waits until the API
  // server serves nodefeatures (the CRD established).
  void Install() {
    Apply("nfd/nodefeature-crd.yaml");
    Apply("daemonset.yaml");
    Apply("node-policy.yaml");
    for (const char* node : {"gpu-a", "gpu-b"}) {
      absl::StatusOr<Json> made = admin_.client->Create(
          "/api/v1/nodes", {{"apiVersion", "v1"},
                            {"kind", "Node"},
                            {"metadata", {{"name", node}}}});
      ASSERT_TRUE(made.ok() ||
                  made.status().code() == absl::StatusCode::kAlreadyExists)
          << made.status();
    }
    // A guard against a hang, not a timing check.
    for (int i = 0; i < 600; ++i) {
      absl::StatusOr<Json> list =
          admin_.client->Get(labels::kNodeFeatureGroupVersionPath);
      if (list.ok() && labels::ListsNodeFeatures(*list)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "nodefeatures never served";
  }

  // A token of gpulet's service account bound to a pod on `node`, as the
  // kubelet asks for it (TokenRequest).
  std::string AgentToken(const std::string& node) {
    const std::string pod_name = "gpulet-on-" + node;
    absl::StatusOr<Json> pod = admin_.client->Get(
        absl::StrCat("/api/v1/namespaces/kube-system/pods/", pod_name));
    if (!pod.ok()) {
      pod = admin_.client->Create(
          "/api/v1/namespaces/kube-system/pods",
          {{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata", {{"name", pod_name}}},
           {"spec",
            {{"serviceAccountName", "gpulet"},
             {"automountServiceAccountToken", false},
             {"nodeName", node},
             {"containers",
              {{{"name", "c"}, {"image", "registry.example.com/x:1"}}}}}}});
    }
    EXPECT_TRUE(pod.ok()) << pod.status();
    if (!pod.ok()) return "";
    absl::StatusOr<Json> got = admin_.client->Create(
        "/api/v1/namespaces/kube-system/serviceaccounts/gpulet/token",
        {{"apiVersion", "authentication.k8s.io/v1"},
         {"kind", "TokenRequest"},
         {"spec",
          {{"boundObjectRef",
            {{"apiVersion", "v1"},
             {"kind", "Pod"},
             {"name", pod_name},
             {"uid", (*pod)["metadata"]["uid"]}}}}}});
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? (*got)["status"]["token"].get<std::string>() : "";
  }

  // A kubeconfig for the test's API server with `token`; its path.
  std::string Kubeconfig(const std::string& token) {
    const std::string path = dir_ + "/kubeconfig";
    EXPECT_TRUE(common::WriteFileAtomic(dir_ + "/ca.crt", host_->ca().cert_pem,
                                        {.mode = 0600, .durable = false})
                    .ok());
    EXPECT_TRUE(
        common::WriteFileAtomic(
            path,
            absl::StrCat(
                "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                "clusters:\n- name: c\n  cluster:\n    server: ",
                host_->AdminConfig().server,
                "\n    certificate-authority: ca.crt\n",
                "users:\n- name: u\n  user:\n    token: ", token,
                "\ncontexts:\n- name: t\n  context: {cluster: c, user: u}\n"),
            {.mode = 0600, .durable = false})
            .ok());
    return path;
  }

  // `gpulet labels --oneshot` on the simulated a100-mig machine with
  // `args`, its environment cleared of what it reads.
  Outcome RunLabels(const std::vector<std::string>& args) {
    const std::string err = dir_ + "/err";
    // (The paths and arguments hold no characters the shell would
    // interpret.)
    const std::string cmd = absl::StrCat(
        "/usr/bin/env -i GPULET_SIM_MACHINE=a100-mig ", GPULET_BINARY,
        " --nvml-lib ", GPULET_SIM_LIB_DIR, "/libnvidia-ml.so.1 --sysfs-root ",
        dir_, "/no-sys labels --oneshot --no-timestamp --machine-type-file ",
        dir_, "/no-product ", absl::StrJoin(args, " "), " 2>", err);
    const int status = std::system(cmd.c_str());
    Outcome run;
    run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    absl::StatusOr<std::string> text = common::ReadFile(err);
    run.err = text.ok() ? *text : "";
    return run;
  }

  // The labels of the feature file `path`.
  static Labels FileLabels(const std::string& path) {
    Labels out;
    absl::StatusOr<std::string> text = common::ReadFile(path);
    EXPECT_TRUE(text.ok()) << text.status();
    if (!text.ok()) return out;
    for (absl::string_view line :
         absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
      std::vector<std::string> kv =
          absl::StrSplit(line, absl::MaxSplits('=', 1));
      if (kv.size() == 2) out[kv[0]] = kv[1];
    }
    return out;
  }

  absl::StatusOr<Json> Object(const std::string& node) {
    return admin_.client->Get(
        absl::StrCat(kNodeFeatures, "/nvidia-features-for-", node));
  }
  static Labels SpecLabels(const Json& object) {
    Labels out;
    for (const auto& [k, v] : object["spec"]["labels"].items()) {
      out[k] = v.get<std::string>();
    }
    return out;
  }

  // Waits until the agent is refused `body` (dry run) with `denied` in the
  // message: RBAC and the policy reach the server's caches a moment after
  // they are created. A guard against a hang, not a timing check.
  static void AwaitEnforced(const ApiClient& as, const Json& body,
                            const std::string& denied) {
    absl::Status last;
    for (int i = 0; i < 600; ++i) {
      last = as.client->Create(absl::StrCat(kNodeFeatures, "?dryRun=All"), body)
                 .status();
      if (!last.ok() && absl::StrContains(last.message(), denied)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "the policy was never enforced; last answer: " << last;
  }

  std::string dir_;
};

TEST_F(LabelsApiServerTest, WritesTheFeatureFilesLabelsToTheNodeFeature) {
  ASSERT_NO_FATAL_FAILURE(Install());
  const std::string token = AgentToken("gpu-a");
  ASSERT_FALSE(token.empty());
  ApiClient agent = Connect(token);
  ASSERT_NE(agent.client, nullptr);
  AwaitEnforced(agent, labels::NewNodeFeature("kube-system", "gpu-b", {}),
                kDenied);
  const std::string kubeconfig = Kubeconfig(token);
  const std::vector<std::string> api = {"--node-name",  "gpu-a",
                                        "--namespace",  "kube-system",
                                        "--kubeconfig", kubeconfig};
  std::vector<std::string> mixed = {"--mig-strategy", "mixed"};

  // The file, as it would be written (NodeFeature API off).
  std::vector<std::string> args = api;
  args.insert(args.end(), mixed.begin(), mixed.end());
  args.insert(args.end(),
              {"--use-node-feature-api=false", "-o", dir_ + "/gfd-mixed"});
  Outcome run = RunLabels(args);
  ASSERT_EQ(run.code, 0) << run.err;
  const Labels file_mixed = FileLabels(dir_ + "/gfd-mixed");
  ASSERT_TRUE(file_mixed.contains("nvidia.com/mig-1g.5gb.count"));
  ASSERT_FALSE(Object("gpu-a").ok());

  // Not given: the API server serves nodefeatures, so the object, and no
  // file.
  args = api;
  args.insert(args.end(), mixed.begin(), mixed.end());
  args.insert(args.end(), {"-o", dir_ + "/gfd-auto"});
  run = RunLabels(args);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("NodeFeature kube-system/"
                                 "nvidia-features-for-gpu-a"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/gfd-auto"));
  absl::StatusOr<Json> object = Object("gpu-a");
  ASSERT_TRUE(object.ok()) << object.status();
  EXPECT_EQ(SpecLabels(*object), file_mixed);
  EXPECT_EQ((*object)["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"],
            "gpu-a");
  const std::string version = (*object)["metadata"]["resourceVersion"];

  // The same labels again: nothing written.
  run = RunLabels(args);
  ASSERT_EQ(run.code, 0) << run.err;
  object = Object("gpu-a");
  ASSERT_TRUE(object.ok()) << object.status();
  EXPECT_EQ((*object)["metadata"]["resourceVersion"], version);

  // Another configuration: MIG strategy none from a config file.
  const std::string config = dir_ + "/config.yaml";
  ASSERT_TRUE(common::WriteFileAtomic(
                  config, "version: v1\nflags:\n  migStrategy: none\n",
                  {.mode = 0600, .durable = false})
                  .ok());
  args = api;
  args.insert(args.end(),
              {"--config-file", config, "--use-node-feature-api=false", "-o",
               dir_ + "/gfd-none"});
  run = RunLabels(args);
  ASSERT_EQ(run.code, 0) << run.err;
  const Labels file_none = FileLabels(dir_ + "/gfd-none");
  ASSERT_NE(file_none, file_mixed);
  args = api;
  args.insert(args.end(), {"--config-file", config});
  run = RunLabels(args);
  ASSERT_EQ(run.code, 0) << run.err;
  object = Object("gpu-a");
  ASSERT_TRUE(object.ok()) << object.status();
  EXPECT_EQ(SpecLabels(*object), file_none);
  EXPECT_FALSE(SpecLabels(*object).contains("nvidia.com/mig-1g.5gb.count"));
  EXPECT_FALSE(SpecLabels(*object).contains("nvidia.com/mig.strategy"));
}

TEST_F(LabelsApiServerTest, TheAgentWritesOnlyItsOwnNodesObject) {
  ASSERT_NO_FATAL_FAILURE(Install());
  const std::string token = AgentToken("gpu-a");
  ASSERT_FALSE(token.empty());
  ApiClient agent = Connect(token);
  ASSERT_NE(agent.client, nullptr);
  const Json other = labels::NewNodeFeature("kube-system", "gpu-b",
                                            {{"nvidia.com/gpu.count", "8"}});
  AwaitEnforced(agent, other, kDenied);

  // gpulet itself, told it runs on gpu-b with gpu-a's token.
  const std::string kubeconfig = Kubeconfig(token);
  Outcome run = RunLabels({"--node-name", "gpu-b", "--namespace", "kube-system",
                           "--kubeconfig", kubeconfig});
  EXPECT_EQ(run.code, 1);
  EXPECT_THAT(run.err, HasSubstr(kDenied));
  EXPECT_FALSE(Object("gpu-b").ok());

  // By hand: another node's name, its own name with another node's label,
  // a label outside nvidia.com/, raw features, another namespace.
  absl::Status s = agent.client->Create(kNodeFeatures, other).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr(kDenied)) << s;
  Json mislabelled = labels::NewNodeFeature("kube-system", "gpu-a", {});
  mislabelled["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] =
      "gpu-b";
  s = agent.client->Create(kNodeFeatures, mislabelled).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr(kDenied)) << s;
  s = agent.client
          ->Create(kNodeFeatures,
                   labels::NewNodeFeature(
                       "kube-system", "gpu-a",
                       {{"node-role.kubernetes.io/control-plane", ""}}))
          .status();
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("not node-role.kubernetes.io/control-plane"))
      << s;
  s = agent.client
          ->Create(kNodeFeatures,
                   labels::NewNodeFeature(
                       "kube-system", "gpu-a",
                       {{"nvidia.com/device-plugin.config", "mig"}}))
          .status();
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("nvidia.com/device-plugin.config"))
      << s;
  Json raw = labels::NewNodeFeature("kube-system", "gpu-a", {});
  raw["spec"]["features"]["flags"]["cpu.cpuid"] = {
      {"elements", {{"AVX512F", Json::object()}}}};
  s = agent.client->Create(kNodeFeatures, raw).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr("raw features")) << s;
  Json elsewhere = labels::NewNodeFeature("default", "gpu-a", {});
  s = agent.client
          ->Create(
              "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/default/nodefeatures",
              elsewhere)
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;

  // Its own: created by hand with a stale label, then brought up to date by
  // gpulet (the stale label gone).
  ASSERT_TRUE(agent.client
                  ->Create(kNodeFeatures, labels::NewNodeFeature(
                                              "kube-system", "gpu-a",
                                              {{"nvidia.com/gpu.count", "99"},
                                               {"nvidia.com/gpu.stale", "x"}}))
                  .ok());
  Outcome own = RunLabels({"--node-name", "gpu-a", "--namespace", "kube-system",
                           "--kubeconfig", kubeconfig});
  EXPECT_EQ(own.code, 0) << own.err;
  absl::StatusOr<Json> object = Object("gpu-a");
  ASSERT_TRUE(object.ok()) << object.status();
  EXPECT_EQ(SpecLabels(*object).at("nvidia.com/gpu.count"), "4");
  EXPECT_FALSE(SpecLabels(*object).contains("nvidia.com/gpu.stale"));
}

}  // namespace
}  // namespace gpulet
