// Several kubeconfigs merged as kubectl merges $KUBECONFIG: precedence,
// paths relative to each file, files that do not exist.
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"
#include "src/net/kube/kubeconfig.h"

namespace gpulet::config {
namespace {

using ::testing::HasSubstr;

// /d/a/config: current-context ctx-a.
constexpr char kA[] = R"(current-context: ctx-a
contexts:
- {name: ctx-a, context: {cluster: shared, user: ua}}
clusters:
- name: shared
  cluster: {server: "https://a:1", certificate-authority: ca.pem}
users:
- name: ua
  user: {client-certificate: c.pem, client-key: k.pem}
)";

// /d/b/config: current-context ctx-b, and its own ctx-a, shared and ua.
constexpr char kB[] = R"(current-context: ctx-b
contexts:
- {name: ctx-a, context: {cluster: only-b, user: ua, namespace: nb}}
- {name: ctx-b, context: {cluster: shared, user: ub}}
clusters:
- name: shared
  cluster: {server: "https://b:2"}
- name: only-b
  cluster: {server: "https://only-b:3"}
users:
- name: ua
  user: {token: from-b}
- name: ub
  user: {tokenFile: tok, as: jane}
)";

constexpr char kNoCurrent[] = R"(contexts:
- {name: ctx-n, context: {cluster: shared}}
)";

TEST(KubeconfigMergeTest, FirstFileToSetAKeyWins) {
  struct Case {
    std::vector<std::string> order;  // of a, b, n
    std::string context;
    std::string server, ns, cert_file, token, token_file, as;
  };
  const Case cases[] = {
      // current-context and everything it names from a.
      {{"a", "b"}, "", "https://a:1", "default", "/d/a/c.pem", "", "", ""},
      // From b when b comes first.
      {{"b", "a"}, "", "https://b:2", "default", "", "", "/d/b/tok", "jane"},
      // ctx-b only in b, but cluster "shared" from a, which comes first; the
      // user's relative tokenFile resolves against b's directory.
      {{"a", "b"},
       "ctx-b",
       "https://a:1",
       "default",
       "",
       "",
       "/d/b/tok",
       "jane"},
      // b's ctx-a wins over a's, and its user ua is b's too.
      {{"b", "a"}, "ctx-a", "https://only-b:3", "nb", "", "from-b", "", ""},
      // A file without current-context: the next one's.
      {{"n", "b"}, "", "https://b:2", "default", "", "", "/d/b/tok", "jane"},
      // n's ctx-n names cluster shared, first found in a.
      {{"n", "b", "a"}, "ctx-n", "https://b:2", "default", "", "", "", ""},
      {{"n", "a", "b"}, "ctx-n", "https://a:1", "default", "", "", "", ""},
  };
  for (const Case& c : cases) {
    std::vector<KubeconfigText> files;
    for (const std::string& f : c.order) {
      files.push_back({absl::StrCat("/d/", f, "/config"), f == "a" ? kA
                                                          : f == "b"
                                                              ? kB
                                                              : kNoCurrent});
    }
    const std::string what = absl::StrCat(c.order.size(), " files, first ",
                                          c.order[0], ", context ", c.context);
    absl::StatusOr<KubeconfigSelection> sel =
        SelectKubeconfig(files, c.context);
    ASSERT_TRUE(sel.ok()) << what << ": " << sel.status();
    EXPECT_EQ(sel->config.server, c.server) << what;
    EXPECT_EQ(sel->config.namespace_name, c.ns) << what;
    EXPECT_EQ(sel->config.client_cert_file, c.cert_file) << what;
    EXPECT_EQ(sel->config.token, c.token) << what;
    EXPECT_EQ(sel->config.token_file, c.token_file) << what;
    EXPECT_EQ(sel->config.impersonation.user, c.as) << what;
  }
}

TEST(KubeconfigMergeTest, ErrorsNameTheFileAndTheList) {
  absl::StatusOr<KubeconfigSelection> sel = SelectKubeconfig(
      {{"/d/n/config", kNoCurrent}, {"/d/a/config", kA}}, "nope");
  ASSERT_FALSE(sel.ok());
  EXPECT_THAT(sel.status().message(),
              HasSubstr("/d/n/config:/d/a/config: context: no entry named "
                        "\"nope\" in contexts"));
  sel = SelectKubeconfig({{"/d/n/config", kNoCurrent}}, "ctx-n");
  ASSERT_FALSE(sel.ok());
  EXPECT_THAT(sel.status().message(),
              HasSubstr("/d/n/config: contexts[0].context.cluster: no entry "
                        "named \"shared\" in clusters"));
  sel = SelectKubeconfig({{"/d/n/config", kNoCurrent},
                          {"/d/x/config",
                           "users:\n- {name: ua, user: "
                           "{auth-provider: {name: x}}}\n"},
                          {"/d/a/config", kA}},
                         "ctx-a");
  ASSERT_FALSE(sel.ok());
  EXPECT_THAT(sel.status().message(),
              HasSubstr("/d/x/config: users[0].user.auth-provider: not "
                        "supported"));
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kmrg.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    EXPECT_TRUE(common::WriteFileAtomic(p, text, {.durable = false}).ok());
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(KubeconfigMergeTest, ListSkipsMissingFilesAndReadsRelativeToEach) {
  TempDir dir;
  dir.Write("a/ca.pem", "CA-A");
  dir.Write("a/c.pem", "CERT-A");
  dir.Write("a/k.pem", "KEY-A");
  const std::string a = dir.Write("a/config", kA);
  const std::string b = dir.Write("b/config", kB);
  const std::string missing = dir.path() + "/none/config";
  absl::StatusOr<ApiServerConfig> config =
      LoadKubeconfigList(absl::StrCat(missing, ":", a, "::", b));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://a:1");
  EXPECT_EQ(config->ca_pem, "CA-A");
  EXPECT_EQ(config->client_cert_pem, "CERT-A");
  EXPECT_EQ(config->client_key_pem, "KEY-A");
  // Kept as paths: the transport re-reads a rotated pair.
  EXPECT_EQ(config->client_cert_file, dir.path() + "/a/c.pem");
  EXPECT_EQ(config->client_key_file, dir.path() + "/a/k.pem");
  EXPECT_EQ(config->source, absl::StrCat("kubeconfig ", a, ":", b));

  config = LoadKubeconfigList(absl::StrCat(b, ":", a), "ctx-b");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->token_file, dir.path() + "/b/tok");

  config = LoadKubeconfigList(absl::StrCat(missing, ":", missing, "2"));
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(), HasSubstr("none of its files"));
}

// $KUBECONFIG is merged; --kubeconfig is one file, even with a ':' in it.
TEST(KubeconfigMergeTest, ExplicitFileIsNotAList) {
  TempDir dir;
  dir.Write("a/ca.pem", "CA-A");
  dir.Write("a/c.pem", "CERT-A");
  dir.Write("a/k.pem", "KEY-A");
  const std::string a = dir.Write("a/config", kA);
  const std::string b = dir.Write("b/config", kB);
  const std::string list = absl::StrCat(b, ":", a);
  InClusterOptions env{
      .getenv = [&](const std::string& name) -> std::optional<std::string> {
        if (name == "KUBECONFIG") return list;
        return std::nullopt;
      }};
  absl::StatusOr<ApiServerConfig> config = LoadApiServerConfig("", "", env);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://b:2");
  config = LoadApiServerConfig(a, "", env);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://a:1");
  config = LoadApiServerConfig(list, "", env);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpulet::config
