#include "src/cluster/extender/names.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::extender {
namespace {

using ::testing::HasSubstr;

TEST(Names, SubdomainsAsKubernetesValidatesThem) {
  for (const std::string& good : std::vector<std::string>{
           "a", "node-1", "gpu-node.example.com", "0", std::string(253, 'a')}) {
    EXPECT_TRUE(IsDns1123Subdomain(good)) << good;
  }
  for (const std::string& bad : std::vector<std::string>{
           "", "-a", "a-", "A", "a..b", "a.-b", ".a", "a.", "a_b", "a/b",
           "../x", "a b", std::string("a\0b", 3), std::string(254, 'a')}) {
    EXPECT_FALSE(IsDns1123Subdomain(bad)) << bad;
  }
}

TEST(Names, LabelsAsKubernetesValidatesThem) {
  EXPECT_TRUE(IsDns1123Label("kube-system"));
  EXPECT_TRUE(IsDns1123Label(std::string(63, 'a')));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'a')));
  EXPECT_FALSE(IsDns1123Label("a.b"));
  EXPECT_FALSE(IsDns1123Label(""));
  EXPECT_FALSE(IsDns1123Label("Default"));
}

TEST(Names, ErrorsNameTheFieldAndShortenTheValue) {
  const absl::Status s =
      CheckSubdomain("ExtenderArgs.NodeNames[2]", std::string(1000, 'X'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("ExtenderArgs.NodeNames[2]: \"XXXX"));
  EXPECT_LT(s.message().size(), 250u);
  EXPECT_THAT(CheckLabel("ns", "a.b").message(), HasSubstr("DNS-1123 label"));
  EXPECT_TRUE(CheckUid("uid", "6f1c6c3e-1d4b-4d1e-9c8f-2b7d0a4e5f60").ok());
  EXPECT_FALSE(CheckUid("uid", "").ok());
  EXPECT_FALSE(CheckUid("uid", std::string(129, 'a')).ok());
  EXPECT_FALSE(CheckUid("uid", "a b").ok());
}

}  // namespace
}  // namespace gpulet::extender
