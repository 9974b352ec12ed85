#include "src/model/labels/node_feature.h"

#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::labels {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

TEST(NodeFeatureTest, NamedAfterTheNodeAsGpuFeatureDiscoveryNamesIt) {
  absl::StatusOr<std::string> name = NodeFeatureName("gpu-node-1");
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_EQ(*name, "nvidia-features-for-gpu-node-1");
  EXPECT_EQ(NodeFeaturePath("kube-system", *name).value(),
            "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/kube-system/"
            "nodefeatures/nvidia-features-for-gpu-node-1");
  EXPECT_EQ(NodeFeaturePath("gpu").value(),
            "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/gpu/nodefeatures");
}

TEST(NodeFeatureTest, RefusesNamesThatCannotBeAnObjectOrALabel) {
  EXPECT_THAT(std::string(NodeFeatureName("Node_1").status().message()),
              HasSubstr("node name"));
  EXPECT_THAT(std::string(NodeFeatureName("").status().message()),
              HasSubstr("node name"));
  EXPECT_THAT(
      std::string(NodeFeatureName(std::string(64, 'a')).status().message()),
      HasSubstr("nfd.node.kubernetes.io/node-name"));
  EXPECT_TRUE(NodeFeatureName(std::string(63, 'a')).ok());
  EXPECT_FALSE(NodeFeaturePath("a/b", "x").ok());
  EXPECT_FALSE(NodeFeaturePath("ns", "../nodes").ok());
}

TEST(NodeFeatureTest, NewObjectCarriesTheNodeNameLabelAndTheLabels) {
  EXPECT_EQ(NewNodeFeature("kube-system", "n1",
                           {{"nvidia.com/gpu.count", "8"},
                            {"nvidia.com/cuda.driver.rev", ""}}),
            (Json{{"apiVersion", "nfd.k8s-sigs.io/v1alpha1"},
                  {"kind", "NodeFeature"},
                  {"metadata",
                   {{"name", "nvidia-features-for-n1"},
                    {"namespace", "kube-system"},
                    {"labels", {{"nfd.node.kubernetes.io/node-name", "n1"}}}}},
                  {"spec",
                   {{"features",
                     {{"attributes", Json::object()},
                      {"flags", Json::object()},
                      {"instances", Json::object()}}},
                    {"labels",
                     {{"nvidia.com/gpu.count", "8"},
                      {"nvidia.com/cuda.driver.rev", ""}}}}}}));
  EXPECT_EQ(NewNodeFeature("ns", "n1", {})["spec"]["labels"], Json::object());
}

TEST(NodeFeatureTest, UpdateReplacesTheLabelsAndKeepsTheRest) {
  Json current = NewNodeFeature(
      "ns", "n1",
      {{"nvidia.com/gpu.count", "8"}, {"nvidia.com/mig.strategy", "mixed"}});
  current["metadata"]["resourceVersion"] = "42";
  current["metadata"]["labels"]["example.com/team"] = "a";
  current["metadata"]["annotations"]["example.com/note"] = "x";
  current["spec"]["features"]["flags"]["x"] = {{"elements", Json::object()}};

  std::optional<Json> updated =
      UpdatedNodeFeature(current, "n1", {{"nvidia.com/gpu.count", "4"}});
  ASSERT_TRUE(updated.has_value());
  Json want = current;
  // A label no longer computed is gone: spec.labels is replaced whole.
  want["spec"]["labels"] = {{"nvidia.com/gpu.count", "4"}};
  EXPECT_EQ(*updated, want);
  EXPECT_EQ((*updated)["metadata"]["resourceVersion"], "42");
}

TEST(NodeFeatureTest, UpdateIsNothingWhenTheObjectAlreadyCarriesTheLabels) {
  Json current = NewNodeFeature("ns", "n1", {{"nvidia.com/gpu.count", "8"}});
  EXPECT_EQ(UpdatedNodeFeature(current, "n1", {{"nvidia.com/gpu.count", "8"}}),
            std::nullopt);
}

TEST(NodeFeatureTest, UpdatePutsBackTheNodeNameLabel) {
  Json current = NewNodeFeature("ns", "n1", {{"nvidia.com/gpu.count", "8"}});
  current["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] = "n2";
  std::optional<Json> updated =
      UpdatedNodeFeature(current, "n1", {{"nvidia.com/gpu.count", "8"}});
  ASSERT_TRUE(updated.has_value());
  EXPECT_EQ(
      (*updated)["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"],
      "n1");
  current.erase("spec");
  updated = UpdatedNodeFeature(current, "n1", {});
  ASSERT_TRUE(updated.has_value());
  EXPECT_EQ((*updated)["spec"]["labels"], Json::object());
}

TEST(NodeFeatureTest, DiscoveryListsNodeFeatures) {
  EXPECT_TRUE(ListsNodeFeatures(
      {{"kind", "APIResourceList"},
       {"groupVersion", "nfd.k8s-sigs.io/v1alpha1"},
       {"resources",
        {{{"name", "nodefeaturerules"}, {"namespaced", false}},
         {{"name", "nodefeatures"}, {"namespaced", true}}}}}));
  EXPECT_FALSE(
      ListsNodeFeatures({{"kind", "APIResourceList"},
                         {"resources", {{{"name", "nodefeaturerules"}}}}}));
  EXPECT_FALSE(ListsNodeFeatures({{"kind", "APIResourceList"}}));
  EXPECT_FALSE(ListsNodeFeatures(Json::array()));
  EXPECT_FALSE(ListsNodeFeatures({{"resources", {"nodefeatures"}}}));
}

}  // namespace
}  // namespace gpulet::labels
