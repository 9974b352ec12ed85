#include "src/net/kube/api_path.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::kube {
namespace {

TEST(ApiPathTest, QueryValuesAreEscaped) {
  EXPECT_EQ(WithQuery("/api/v1/pods",
                      {{"fieldSelector", PodsOnNodeSelector("node-1")},
                       {"labelSelector", "a in (x,y)"},
                       {"continue", ""},
                       {"limit", "500"}}),
            "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1&"
            "labelSelector=a%20in%20%28x%2Cy%29&limit=500");
  EXPECT_EQ(WithQuery("/api/v1/pods", {{"continue", ""}}), "/api/v1/pods");
  EXPECT_EQ(EscapeQueryValue("a&b=c/d?e#f\xff"), "a%26b%3Dc%2Fd%3Fe%23f%FF");
}

TEST(ApiPathTest, ObjectPaths) {
  EXPECT_EQ(*NodePath("gpu-node.example"), "/api/v1/nodes/gpu-node.example");
  EXPECT_EQ(*PodsPath(), "/api/v1/pods");
  EXPECT_EQ(*PodsPath("team-a"), "/api/v1/namespaces/team-a/pods");
  EXPECT_EQ(*PodBindingPath("team-a", "job-0"),
            "/api/v1/namespaces/team-a/pods/job-0/binding");
}

TEST(ApiPathTest, NamesThatCouldLeaveTheirPathAreRefused) {
  for (const char* name :
       {"", "..", "a/b", "A", "-a", "a-", "a?b", "a b", "a%2F", "\xc3\xa9"}) {
    absl::StatusOr<std::string> path = NodePath(name);
    EXPECT_EQ(path.status().code(), absl::StatusCode::kInvalidArgument) << name;
  }
  EXPECT_FALSE(NodePath(std::string(254, 'a')).ok());
  EXPECT_TRUE(NodePath(std::string(253, 'a')).ok());
  EXPECT_THAT(PodPath("ns", "Bad").status().message(),
              ::testing::HasSubstr("pod name \"Bad\""));
}

}  // namespace
}  // namespace gpulet::kube
