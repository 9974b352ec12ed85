#include "src/model/labels/node_patch.h"

#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::labels {
namespace {

using Json = nlohmann::json;

Json NodeWith(Json labels, std::optional<std::string> owned) {
  Json node = {{"kind", "Node"},
               {"metadata", {{"name", "n1"}, {"labels", std::move(labels)}}}};
  if (owned.has_value()) {
    node["metadata"]["annotations"][kOwnedLabelsAnnotation] = *owned;
  }
  return node;
}

TEST(FeatureFileTest, OneSortedLinePerLabel) {
  EXPECT_EQ(FeatureFileText({{"nvidia.com/gpu.count", "8"},
                             {"nvidia.com/cuda.driver.rev", ""}}),
            "nvidia.com/cuda.driver.rev=\nnvidia.com/gpu.count=8\n");
  EXPECT_EQ(FeatureFileText({}), "");
}

TEST(NodeLabelPatchTest, FirstPatchSetsEveryLabelAndTheAnnotation) {
  std::optional<Json> patch =
      NodeLabelPatch(NodeWith({{"kubernetes.io/hostname", "n1"}}, std::nullopt),
                     {{"nvidia.com/gpu.count", "8"},
                      {"nvidia.com/gpu.product", "NVIDIA-H100"}});
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(*patch,
            (Json{{"metadata",
                   {{"labels",
                     {{"nvidia.com/gpu.count", "8"},
                      {"nvidia.com/gpu.product", "NVIDIA-H100"}}},
                    {"annotations",
                     {{kOwnedLabelsAnnotation,
                       "nvidia.com/gpu.count,nvidia.com/gpu.product"}}}}}}));
}

TEST(NodeLabelPatchTest, StaleOwnedLabelsGoOthersStay) {
  Json node = NodeWith({{"nvidia.com/gpu.count", "8"},
                        {"nvidia.com/gpu.replicas", "4"},
                        {"nvidia.com/gpu.present", "true"},
                        {"team", "a"}},
                       "nvidia.com/gpu.count,nvidia.com/gpu.replicas,team,"
                       "nvidia.com/gone");
  std::optional<Json> patch =
      NodeLabelPatch(node, {{"nvidia.com/gpu.count", "8"}});
  ASSERT_TRUE(patch.has_value());
  // The replicas label goes; "team" is listed but not under nvidia.com/, and
  // "nvidia.com/gone" is no longer on the node: both left alone.
  EXPECT_EQ((*patch)["metadata"]["labels"],
            (Json{{"nvidia.com/gpu.replicas", nullptr}}));
  EXPECT_EQ((*patch)["metadata"]["annotations"][kOwnedLabelsAnnotation],
            "nvidia.com/gpu.count");
}

TEST(NodeLabelPatchTest, NothingToDoIsNoPatch) {
  Json node = NodeWith({{"nvidia.com/gpu.count", "8"}, {"team", "a"}},
                       "nvidia.com/gpu.count");
  EXPECT_EQ(NodeLabelPatch(node, {{"nvidia.com/gpu.count", "8"}}),
            std::nullopt);
}

TEST(NodeLabelPatchTest, ChangedValuesAndAnOutdatedAnnotationArePatched) {
  Json node = NodeWith({{"nvidia.com/gpu.count", "8"}}, "nvidia.com/gpu.count");
  std::optional<Json> patch =
      NodeLabelPatch(node, {{"nvidia.com/gpu.count", "7"}});
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ((*patch)["metadata"]["labels"],
            (Json{{"nvidia.com/gpu.count", "7"}}));
  // A label already right but not yet listed as owned.
  node = NodeWith({{"nvidia.com/gpu.count", "8"}}, std::nullopt);
  patch = NodeLabelPatch(node, {{"nvidia.com/gpu.count", "8"}});
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ((*patch)["metadata"]["labels"], Json::object());
  EXPECT_EQ((*patch)["metadata"]["annotations"][kOwnedLabelsAnnotation],
            "nvidia.com/gpu.count");
}

TEST(NodeLabelPatchTest, OddNodeObjectsAreReadAsUnlabelled) {
  for (const Json& node :
       {Json(nullptr), Json::array(), Json{{"metadata", 3}},
        Json{{"metadata",
              {{"labels", "x"},
               {"annotations", {{kOwnedLabelsAnnotation, 5}}}}}}}) {
    std::optional<Json> patch =
        NodeLabelPatch(node, {{"nvidia.com/gpu.count", "1"}});
    ASSERT_TRUE(patch.has_value()) << node.dump();
    EXPECT_EQ((*patch)["metadata"]["labels"],
              (Json{{"nvidia.com/gpu.count", "1"}}));
  }
}

}  // namespace
}  // namespace gpulet::labels
