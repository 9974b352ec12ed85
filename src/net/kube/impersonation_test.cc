#include "src/net/kube/impersonation.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/config/yaml_json.h"

namespace gpulet::config {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<Impersonation> Read(const std::string& yaml) {
  absl::StatusOr<nlohmann::ordered_json> user = YamlToJson(yaml, "t");
  EXPECT_TRUE(user.ok()) << user.status();
  return ReadImpersonation(*user, "kubeconfig k", "users[0].user");
}

TEST(ImpersonationTest, HeadersOnePerGroupAndExtraValue) {
  Impersonation imp{.user = "jane",
                    .uid = "u-1",
                    .groups = {"a", "b"},
                    .extra = {{"scopes", {"x", "y"}}, {"k8s.io/id", {"1"}}}};
  EXPECT_EQ(ImpersonationHeaders(imp),
            "Impersonate-User: jane\r\n"
            "Impersonate-Uid: u-1\r\n"
            "Impersonate-Group: a\r\n"
            "Impersonate-Group: b\r\n"
            "Impersonate-Extra-k8s.io%2Fid: 1\r\n"
            "Impersonate-Extra-scopes: x\r\n"
            "Impersonate-Extra-scopes: y\r\n");
  EXPECT_EQ(ImpersonationHeaders({}), "");
}

// Every byte that is not an RFC 7230 token character, and '%', as %XX.
TEST(ImpersonationTest, ExtraKeysArePercentEncoded) {
  EXPECT_EQ(EscapeExtraKey("acme.com/project"), "acme.com%2Fproject");
  EXPECT_EQ(EscapeExtraKey("50%"), "50%25");
  EXPECT_EQ(EscapeExtraKey("a b:c"), "a%20b%3Ac");
  EXPECT_EQ(EscapeExtraKey("\xc3\xa9"), "%C3%A9");
  EXPECT_EQ(EscapeExtraKey("Az09!#$&'*+-.^_`|~"), "Az09!#$&'*+-.^_`|~");
}

TEST(ImpersonationTest, ReadsTheKubeconfigFields) {
  absl::StatusOr<Impersonation> imp = Read(
      "as: jane\nas-uid: u-1\nas-groups: [a, b]\n"
      "as-user-extra: {scopes: [x, y]}\ntoken: t\n");
  ASSERT_TRUE(imp.ok()) << imp.status();
  EXPECT_EQ(*imp, (Impersonation{.user = "jane",
                                 .uid = "u-1",
                                 .groups = {"a", "b"},
                                 .extra = {{"scopes", {"x", "y"}}}}));
  imp = Read("token: t\n");
  ASSERT_TRUE(imp.ok());
  EXPECT_TRUE(imp->empty());
}

TEST(ImpersonationTest, RefusesWhatTheServerWouldReadOtherwise) {
  struct Case {
    std::string yaml, want;
  };
  const Case cases[] = {
      {"as-groups: [a]", "users[0].user.as-groups: needs `as`"},
      {"as-uid: u", "users[0].user.as-uid: needs `as`"},
      {"as-user-extra: {k: [v]}", "users[0].user.as-user-extra: needs `as`"},
      {"as: \" jane\"", "users[0].user.as: starts or ends with a blank"},
      {"as: \"jane\\r\\nX: y\"", "users[0].user.as: contains a control"},
      {"as: j\nas-groups: [a, \"\"]", "users[0].user.as-groups[1]: is empty"},
      {"as: j\nas-groups: a", "users[0].user.as-groups: expected a list"},
      {"as: j\nas-groups: [1]", "users[0].user.as-groups[0]: expected a str"},
      {"as: j\nas-user-extra: [a]",
       "users[0].user.as-user-extra: expected a "
       "map"},
      {"as: j\nas-user-extra: {k: v}",
       "users[0].user.as-user-extra.k: "
       "expected a list"},
      {"as: j\nas-user-extra: {k: [\"\\t\"]}",
       "users[0].user.as-user-extra.k[0]: contains a control"},
      {"as: [j]", "users[0].user.as: expected a string"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Impersonation> imp = Read(c.yaml);
    ASSERT_FALSE(imp.ok()) << c.yaml;
    EXPECT_EQ(imp.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(imp.status().message(), HasSubstr("kubeconfig k: "));
    EXPECT_THAT(imp.status().message(), HasSubstr(c.want));
  }
}

}  // namespace
}  // namespace gpulet::config
