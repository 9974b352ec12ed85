// The admission policies shipped in deploy/ (node-policy.yaml,
// extender/node-policy.yaml) against a real kube-apiserver of the pinned
// version: a node agent's bound service-account token, made by the server
// for a pod on one Node, may write only that Node's nvidia.com/ labels and
// gpulet.dev/ annotations; the extender's token only the
// gpulet.dev/gpu-memory-pending annotation. The tokens carry the node name
// only as the server puts it there, so this also checks that the pinned
// version passes it on ("authentication.kubernetes.io/node-name").
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
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/clock.h"
#include "src/base/common/file_util.h"
#include "src/base/config/yaml_json.h"
#include "src/net/kube/client.h"
#include "test/integration/apiserver_host.h"

namespace gpulet {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

constexpr char kNodes[] = "/api/v1/nodes";
constexpr char kAgentDenied[] = "may write only the Node its pod runs on";
constexpr char kExtenderDenied[] =
    "may change only the gpulet.dev/gpu-memory-pending";

using ApiClient = testing::ApiServerClient;

class NodePolicyApiServerTest : public testing::ApiServerSuite {
 protected:
  ApiClient Connect(const std::string& token) {
    return testing::ConnectTo(*host_, token);
  }

  // Creates every object of deploy/<file> as written (nothing is skipped:
  // an unknown kind fails the test).
  void Apply(const std::string& file) {
    const std::string path = std::string(GPULET_SOURCE_DIR) + "/deploy/" + file;
    absl::StatusOr<std::string> text = common::ReadFile(path);
    ASSERT_TRUE(text.ok()) << text.status();
    CreateAll(*text, path, "kube-system");
  }

  // Creates every object of a multi-document YAML `text`, the namespaced
  // ones in `ns`.
  void CreateAll(const std::string& text, const std::string& source,
                 const std::string& ns) {
    const std::string in_ns = absl::StrCat("/namespaces/", ns, "/");
    const std::map<std::string, std::string> paths = {
        {"ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles"},
        {"ClusterRoleBinding",
         "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"},
        {"Role", "/apis/rbac.authorization.k8s.io/v1" + in_ns + "roles"},
        {"RoleBinding",
         "/apis/rbac.authorization.k8s.io/v1" + in_ns + "rolebindings"},
        {"ConfigMap", "/api/v1" + in_ns + "configmaps"},
        {"DaemonSet", "/apis/apps/v1" + in_ns + "daemonsets"},
        {"Deployment", "/apis/apps/v1" + in_ns + "deployments"},
        {"Secret", "/api/v1" + in_ns + "secrets"},
        {"Service", "/api/v1" + in_ns + "services"},
        {"ServiceAccount", "/api/v1" + in_ns + "serviceaccounts"},
        {"NetworkPolicy",
         "/apis/networking.k8s.io/v1" + in_ns + "networkpolicies"},
        {"ValidatingAdmissionPolicy",
         "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"},
        {"ValidatingAdmissionPolicyBinding",
         "/apis/admissionregistration.k8s.io/v1/"
         "validatingadmissionpolicybindings"},
    };
    for (absl::string_view doc : absl::StrSplit(text, "\n---\n")) {
      absl::StatusOr<nlohmann::ordered_json> object =
          config::YamlToJson(doc, source);
      ASSERT_TRUE(object.ok()) << source << ": " << object.status();
      if (!object->is_object() || !object->contains("kind")) continue;
      const std::string kind = (*object)["kind"];
      ASSERT_TRUE(paths.contains(kind)) << source << ": " << kind;
      absl::StatusOr<Json> made =
          admin_.client->Create(paths.at(kind), Json::parse(object->dump()));
      ASSERT_TRUE(made.ok()) << source << ": " << made.status();
    }
  }

  void MakeNode(const std::string& name) {
    absl::StatusOr<Json> made = admin_.client->Create(
        kNodes, {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata",
                  {{"name", name}, {"labels", {{"example.com/team", "a"}}}}}});
    ASSERT_TRUE(made.ok()) << made.status();
  }

  // A token of the service account `ns`/`account`, bound to a pod of that
  // account on `node` when `node` is not empty, as the kubelet asks for it
  // (TokenRequest).
  std::string TokenOf(const std::string& account, const std::string& node,
                      const std::string& ns = "kube-system") {
    Json bound = Json::object();
    if (!node.empty()) {
      absl::StatusOr<Json> pod = admin_.client->Create(
          absl::StrCat("/api/v1/namespaces/", ns, "/pods"),
          {{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata", {{"name", account + "-on-" + node}}},
           {"spec",
            {{"serviceAccountName", account},
             {"automountServiceAccountToken", false},
             {"nodeName", node},
             {"containers",
              {{{"name", "c"}, {"image", "registry.example.com/x:1"}}}}}}});
      EXPECT_TRUE(pod.ok()) << pod.status();
      if (!pod.ok()) return "";
      bound = {{"apiVersion", "v1"},
               {"kind", "Pod"},
               {"name", (*pod)["metadata"]["name"]},
               {"uid", (*pod)["metadata"]["uid"]}};
    }
    Json request = {{"apiVersion", "authentication.k8s.io/v1"},
                    {"kind", "TokenRequest"},
                    {"spec", Json::object()}};
    if (!bound.empty()) request["spec"]["boundObjectRef"] = bound;
    absl::StatusOr<Json> got = admin_.client->Create(
        absl::StrCat("/api/v1/namespaces/", ns, "/serviceaccounts/", account,
                     "/token"),
        request);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? (*got)["status"]["token"].get<std::string>() : "";
  }

  // Patches `node` as `as`, with dryRun when `dry`.
  static absl::Status Patch(const ApiClient& as, const std::string& node,
                            const Json& patch, bool dry = false) {
    return as.client
        ->MergePatch(absl::StrCat(kNodes, "/", node, dry ? "?dryRun=All" : ""),
                     patch)
        .status();
  }

  static Json Annotation(const std::string& key, const Json& value) {
    return {{"metadata", {{"annotations", {{key, value}}}}}};
  }
  static Json Label(const std::string& key, const Json& value) {
    return {{"metadata", {{"labels", {{key, value}}}}}};
  }

  // Waits until the API server refuses `patch` (dry run) with `denied` in
  // its message: RBAC and the policy reach the server's caches a moment
  // after they are created. A guard against a hang, not a timing check.
  static void AwaitEnforced(const ApiClient& as, const std::string& node,
                            const Json& patch, const std::string& denied) {
    absl::Status last;
    for (int i = 0; i < 600; ++i) {
      last = Patch(as, node, patch, /*dry=*/true);
      if (!last.ok() && absl::StrContains(last.message(), denied)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "the policy was never enforced; last answer: " << last;
  }

  // Creates namespace `ns` and in it every object of the chart rendered
  // (`helm template`) with the values file `values` as release `release`.
  void RenderAndCreate(const std::string& values, const std::string& release,
                       const std::string& ns) {
    ASSERT_TRUE(
        admin_.client
            ->Create("/api/v1/namespaces", {{"apiVersion", "v1"},
                                            {"kind", "Namespace"},
                                            {"metadata", {{"name", ns}}}})
            .ok());
    char tmpl[] = "/tmp/chart-values-XXXXXX";
    const int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    ::close(fd);
    const std::string file = tmpl;
    ASSERT_TRUE(
        common::WriteFileAtomic(file, values, {.mode = 0600, .durable = false})
            .ok());
    // (The paths hold no characters the shell would interpret.)
    const std::string cmd =
        absl::StrCat(GPULET_HELM_BINARY, " template -n ", ns, " -f ", file, " ",
                     release, " ", GPULET_SOURCE_DIR, "/deploy/chart");
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string rendered;
    char buf[4096];
    for (size_t n; (n = ::fread(buf, 1, sizeof(buf), p)) > 0;) {
      rendered.append(buf, n);
    }
    const int rc = ::pclose(p);
    ::unlink(file.c_str());
    ASSERT_EQ(rc, 0) << rendered;
    ASSERT_THAT(rendered, HasSubstr(absl::StrCat("system:serviceaccount:", ns,
                                                 ":", release, "-gpulet")));
    // The manifest opens with "---"; the split wants it after a newline.
    CreateAll("\n" + rendered, "helm template " + release, ns);
  }
};

TEST_F(NodePolicyApiServerTest, NodeAgentWritesOnlyItsOwnNodesGpuletKeys) {
  Apply("daemonset.yaml");
  Apply("node-policy.yaml");
  MakeNode("gpu-a");
  MakeNode("gpu-b");
  const std::string token = TokenOf("gpulet", "gpu-a");
  ASSERT_FALSE(token.empty());
  ApiClient agent = Connect(token);
  ASSERT_NE(agent.client, nullptr);
  const Json memory = Annotation("gpulet.dev/gpu-memory", "forged");
  AwaitEnforced(agent, "gpu-b", memory, kAgentDenied);

  // Another node's annotations: what would misplace the extender's pods.
  absl::Status s = Patch(agent, "gpu-b", memory);
  EXPECT_THAT(std::string(s.message()), HasSubstr(kAgentDenied)) << s;
  s = Patch(agent, "gpu-b", Label("nvidia.com/gpu.count", "8"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(kAgentDenied)) << s;
  // Its own Node's spec: taints, unschedulable.
  s = Patch(agent, "gpu-a",
            {{"spec",
              {{"taints",
                {{{"key", "x"}, {"value", "y"}, {"effect", "NoSchedule"}}}}}}});
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("may not change a Node's spec"))
      << s;
  s = Patch(agent, "gpu-a", {{"spec", {{"unschedulable", true}}}});
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("may not change a Node's spec"))
      << s;
  // Its own Node's labels and annotations that are not gpulet's.
  s = Patch(agent, "gpu-a", Label("example.com/team", "b"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("not example.com/team")) << s;
  s = Patch(agent, "gpu-a", Label("example.com/team", nullptr));
  EXPECT_THAT(std::string(s.message()), HasSubstr("not example.com/team")) << s;
  s = Patch(agent, "gpu-a",
            Label("node-restriction.kubernetes.io/gpu", "true"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("not node-restriction.kubernetes.io/gpu"))
      << s;
  // The administrator's labels under nvidia.com/: the one that picks the
  // agent's own configuration, and the one that places the DaemonSet.
  for (const char* label :
       {"nvidia.com/device-plugin.config", "nvidia.com/gpu.present"}) {
    s = Patch(agent, "gpu-a", Label(label, "x"));
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("may not change the administrator's labels"))
        << label << ": " << s;
  }
  s = Patch(agent, "gpu-a", Annotation("example.com/note", "x"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("not example.com/note")) << s;
  s = Patch(agent, "gpu-a",
            {{"metadata", {{"finalizers", {"example.com/keep"}}}}});
  EXPECT_THAT(std::string(s.message()), HasSubstr("finalizers or owners")) << s;
  s = Patch(agent, "gpu-a/status",
            {{"status", {{"capacity", {{"nvidia.com/gpu", "100"}}}}}});
  EXPECT_FALSE(s.ok());

  // What gpulet writes: its labels and annotations on its own Node.
  s = Patch(agent, "gpu-a",
            {{"metadata",
              {{"labels", {{"nvidia.com/gpu.count", "8"}}},
               {"annotations",
                {{"gpulet.dev/gpu-memory", "{}"},
                 {"gpulet.dev/node-labels", "nvidia.com/gpu.count"}}}}}});
  EXPECT_TRUE(s.ok()) << s;
  s = Patch(agent, "gpu-a", Label("nvidia.com/gpu.count", nullptr));
  EXPECT_TRUE(s.ok()) << s;
  absl::StatusOr<Json> a = admin_.client->Get(absl::StrCat(kNodes, "/gpu-a"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)["metadata"]["annotations"]["gpulet.dev/gpu-memory"], "{}");
  EXPECT_EQ((*a)["metadata"]["labels"]["example.com/team"], "a");
  EXPECT_FALSE((*a)["metadata"]["labels"].contains("nvidia.com/gpu.count"));
  absl::StatusOr<Json> b = admin_.client->Get(absl::StrCat(kNodes, "/gpu-b"));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE((*b)["metadata"].contains("annotations"));
}

TEST_F(NodePolicyApiServerTest, ExtenderWritesOnlyThePendingAnnotation) {
  Apply("extender/extender.yaml");
  Apply("extender/node-policy.yaml");
  Apply("extender/networkpolicy.yaml");
  MakeNode("gpu-c");
  const std::string token = TokenOf("gpulet-extender", "");
  ASSERT_FALSE(token.empty());
  ApiClient extender = Connect(token);
  ASSERT_NE(extender.client, nullptr);
  AwaitEnforced(extender, "gpu-c",
                Annotation("gpulet.dev/gpu-memory", "forged"), kExtenderDenied);

  absl::Status s =
      Patch(extender, "gpu-c", Annotation("gpulet.dev/gpu-memory", "x"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(kExtenderDenied)) << s;
  s = Patch(extender, "gpu-c", Label("nvidia.com/gpu.count", "8"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("may not change a Node's labels"))
      << s;
  s = Patch(extender, "gpu-c", {{"spec", {{"unschedulable", true}}}});
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("may not change a Node's spec"))
      << s;

  s = Patch(extender, "gpu-c",
            Annotation("gpulet.dev/gpu-memory-pending", "{}"));
  EXPECT_TRUE(s.ok()) << s;
  s = Patch(extender, "gpu-c",
            Annotation("gpulet.dev/gpu-memory-pending", nullptr));
  EXPECT_TRUE(s.ok()) << s;
}

// The chart, rendered for a release "gpu" in "gpu-system" with memory
// shares and the extender (its generated TLS Secrets included), is
// accepted by the API server as rendered, and
// its policy confines that release's service account, not deploy/'s.
TEST_F(NodePolicyApiServerTest, ChartPoliciesConfineTheReleasesAccount) {
  RenderAndCreate(
      "memoryShares:\n  enabled: true\nextender:\n  enabled: "
      "true\n  networkPolicy:\n    from:\n    - ipBlock:\n"
      "        cidr: 10.0.0.0/24\n",
      "gpu", "gpu-system");
  MakeNode("gpu-d");
  MakeNode("gpu-e");
  ApiClient agent = Connect(TokenOf("gpu-gpulet", "gpu-d", "gpu-system"));
  ASSERT_NE(agent.client, nullptr);
  AwaitEnforced(agent, "gpu-e", Annotation("gpulet.dev/gpu-memory", "x"),
                kAgentDenied);
  absl::Status s = Patch(agent, "gpu-d", Label("example.com/team", "b"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("not example.com/team")) << s;
  s = Patch(agent, "gpu-d", Label("nvidia.com/device-plugin.config", "x"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("may not change the administrator's labels"))
      << s;
  s = Patch(agent, "gpu-d", Annotation("gpulet.dev/gpu-memory", "{}"));
  EXPECT_TRUE(s.ok()) << s;

  ApiClient extender =
      Connect(TokenOf("gpu-gpulet-extender", "", "gpu-system"));
  ASSERT_NE(extender.client, nullptr);
  AwaitEnforced(extender, "gpu-e", Annotation("gpulet.dev/gpu-memory", "x"),
                kExtenderDenied);
  s = Patch(extender, "gpu-e",
            Annotation("gpulet.dev/gpu-memory-pending", "{}"));
  EXPECT_TRUE(s.ok()) << s;
}

// One configuration per node (several entries in config.map), without node
// labels or memory shares: the chart's RBAC lets the release's node agent
// list and watch Nodes and write its own Node's gpulet.dev/ annotations,
// and the node agent's policy, rendered for this mode alone, keeps it from
// other Nodes and from the label that picks its configuration.
TEST_F(NodePolicyApiServerTest, ChartPerNodeConfigConfinesTheAgent) {
  RenderAndCreate(
      "config:\n  map:\n    default: \"version: v1\"\n    ts: \"version: "
      "v1\"\nnodeLabels:\n  enabled: false\nextender:\n  enabled: false\n",
      "pn", "pn-system");
  MakeNode("gpu-f");
  MakeNode("gpu-g");
  ApiClient agent = Connect(TokenOf("pn-gpulet", "gpu-f", "pn-system"));
  ASSERT_NE(agent.client, nullptr);
  const Json in_force = Annotation("gpulet.dev/device-plugin-config", "ts");
  AwaitEnforced(agent, "gpu-g", in_force, kAgentDenied);
  absl::StatusOr<kube::ListResult> nodes =
      agent.client->List(kNodes, {.field_selector = "metadata.name=gpu-f"});
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ(nodes->items.size(), 1u);
  absl::Status s = Patch(agent, "gpu-f", in_force);
  EXPECT_TRUE(s.ok()) << s;
  s = Patch(agent, "gpu-f", Label("nvidia.com/device-plugin.config", "ts"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("may not change the administrator's labels"))
      << s;
}

}  // namespace
}  // namespace gpulet
