#include "src/plugin/daemon/node_feature_writer.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/model/labels/node_feature.h"
#include "src/net/kube/client.h"
#include "src/net/testing/fake_transport.h"
#include "src/plugin/daemon/label_publisher.h"

namespace gpulet::daemon {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr char kPath[] =
    "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/gpu/nodefeatures";
constexpr char kObject[] =
    "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/gpu/nodefeatures/"
    "nvidia-features-for-n1";
constexpr char kNotFound[] =
    R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404})";
constexpr char kForbidden[] =
    R"({"kind":"Status","status":"Failure","message":"nodefeatures is forbidden","reason":"Forbidden","code":403})";

Json Served() {
  return {{"kind", "APIResourceList"},
          {"groupVersion", "nfd.k8s-sigs.io/v1alpha1"},
          {"resources",
           {{{"name", "nodefeaturerules"}, {"namespaced", false}},
            {{"name", "nodefeatures"}, {"namespaced", true}}}}};
}

class NodeFeatureWriterTest : public ::testing::Test {
 protected:
  NodeFeatureWriterTest() : client_(transport_, clock_, {.qps = 0}) {}

  Json Body(size_t n) const {
    return Json::parse(transport_.requests().at(n).body);
  }
  NodeFeatureWriter Writer() {
    absl::StatusOr<NodeFeatureWriter> w =
        NodeFeatureWriter::Create(client_, "gpu", "n1");
    EXPECT_TRUE(w.ok()) << w.status();
    return *std::move(w);
  }
  LabelOptions Auto() const {
    LabelOptions options;
    options.node_feature_api = NodeFeatureApi::kAuto;
    options.feature_node = "n1";
    options.feature_namespace = "gpu";
    options.output_file = "/tmp/unused/gfd";
    options.background_patch = false;
    return options;
  }

  common::FakeClock clock_;
  kube::FakeTransport transport_;
  kube::Client client_;
};

TEST_F(NodeFeatureWriterTest, CreatesTheObjectWhenAbsent) {
  transport_.AddResponse(404, kNotFound);
  transport_.AddResponse(201, R"({"kind":"NodeFeature"})");
  NodeFeatureWriter writer = Writer();
  ASSERT_TRUE(writer.Write({{"nvidia.com/gpu.count", "8"}}).ok());
  ASSERT_EQ(transport_.requests().size(), 2u);
  EXPECT_EQ(transport_.requests()[0].method, "GET");
  EXPECT_EQ(transport_.requests()[0].path, kObject);
  EXPECT_EQ(transport_.requests()[1].method, "POST");
  EXPECT_EQ(transport_.requests()[1].path, kPath);
  EXPECT_EQ(Body(1), labels::NewNodeFeature("gpu", "n1",
                                            {{"nvidia.com/gpu.count", "8"}}));
}

TEST_F(NodeFeatureWriterTest, ReplacesChangedLabelsAndLeavesEqualOnesAlone) {
  Json current = labels::NewNodeFeature(
      "gpu", "n1",
      {{"nvidia.com/gpu.count", "8"}, {"nvidia.com/mig.strategy", "mixed"}});
  current["metadata"]["resourceVersion"] = "7";
  transport_.AddResponse(200, current.dump());
  transport_.AddResponse(200, current.dump());
  NodeFeatureWriter writer = Writer();
  ASSERT_TRUE(writer.Write({{"nvidia.com/gpu.count", "8"}}).ok());
  ASSERT_EQ(transport_.requests().size(), 2u);
  EXPECT_EQ(transport_.requests()[1].method, "PUT");
  EXPECT_EQ(transport_.requests()[1].path, kObject);
  EXPECT_EQ(Body(1)["spec"]["labels"], (Json{{"nvidia.com/gpu.count", "8"}}));
  EXPECT_EQ(Body(1)["metadata"]["resourceVersion"], "7");

  transport_.AddResponse(200, current.dump());
  ASSERT_TRUE(writer
                  .Write({{"nvidia.com/gpu.count", "8"},
                          {"nvidia.com/mig.strategy", "mixed"}})
                  .ok());
  EXPECT_EQ(transport_.requests().size(), 3u);
}

TEST_F(NodeFeatureWriterTest, AConflictReadsAgain) {
  Json current = labels::NewNodeFeature("gpu", "n1", {});
  current["metadata"]["resourceVersion"] = "7";
  transport_.AddResponse(200, current.dump());
  transport_.AddResponse(
      409,
      R"({"kind":"Status","status":"Failure","reason":"Conflict","code":409})");
  current["metadata"]["resourceVersion"] = "8";
  transport_.AddResponse(200, current.dump());
  transport_.AddResponse(200, current.dump());
  NodeFeatureWriter writer = Writer();
  ASSERT_TRUE(writer.Write({{"nvidia.com/gpu.count", "8"}}).ok());
  ASSERT_EQ(transport_.requests().size(), 4u);
  EXPECT_EQ(Body(3)["metadata"]["resourceVersion"], "8");
}

TEST_F(NodeFeatureWriterTest, ErrorsNameTheObject) {
  transport_.AddResponse(403, kForbidden);
  NodeFeatureWriter writer = Writer();
  absl::Status s = writer.Write({});
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("gpu/nvidia-features-for-n1"));
  EXPECT_FALSE(NodeFeatureWriter::Create(client_, "gpu", "N_1").ok());
  EXPECT_FALSE(NodeFeatureWriter::Create(client_, "a/b", "n1").ok());
}

TEST_F(NodeFeatureWriterTest, DiscoverySaysWhetherNodeFeaturesAreServed) {
  transport_.AddResponse(200, Served().dump());
  transport_.AddResponse(404, kNotFound);
  transport_.AddResponse(200, R"({"kind":"APIResourceList","resources":[]})");
  transport_.AddResponse(403, kForbidden);
  EXPECT_EQ(NodeFeaturesServed(client_).value(), true);
  EXPECT_EQ(transport_.requests()[0].path, "/apis/nfd.k8s-sigs.io/v1alpha1");
  EXPECT_EQ(NodeFeaturesServed(client_).value(), false);
  EXPECT_EQ(NodeFeaturesServed(client_).value(), false);
  absl::StatusOr<bool> failed = NodeFeaturesServed(client_);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), HasSubstr("NodeFeature"));
}

TEST_F(NodeFeatureWriterTest, AutoWritesTheObjectInsteadOfTheFileWhenServed) {
  transport_.AddResponse(200, Served().dump());
  absl::StatusOr<std::unique_ptr<LabelPublisher>> p =
      LabelPublisher::Create(Auto(), &client_);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE((*p)->writes_node_feature());
  EXPECT_EQ((*p)->options().output_file, "");
  transport_.AddResponse(404, kNotFound);
  transport_.AddResponse(201, "{}");
  ASSERT_TRUE((*p)->WriteApi({{"nvidia.com/gpu.count", "8"}}).ok());
  EXPECT_EQ(transport_.requests().back().method, "POST");
}

TEST_F(NodeFeatureWriterTest, AutoFallsBackToTheFileAndPatchWhenNotServed) {
  transport_.AddResponse(404, kNotFound);
  LabelOptions options = Auto();
  options.node_name = "n1";
  absl::StatusOr<std::unique_ptr<LabelPublisher>> p =
      LabelPublisher::Create(options, &client_);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE((*p)->writes_node_feature());
  EXPECT_EQ((*p)->options().output_file, "/tmp/unused/gfd");
  EXPECT_EQ((*p)->options().node_name, "n1");
}

TEST_F(NodeFeatureWriterTest, AutoWithoutANodeNameAsksNothing) {
  LabelOptions options = Auto();
  options.feature_node = "";
  absl::StatusOr<std::unique_ptr<LabelPublisher>> p =
      LabelPublisher::Create(options, &client_);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE((*p)->writes_node_feature());
  EXPECT_EQ((*p)->options().output_file, "/tmp/unused/gfd");
  EXPECT_TRUE(transport_.requests().empty());
}

TEST_F(NodeFeatureWriterTest, AFailedDiscoveryIsAnError) {
  transport_.AddResponse(403, kForbidden);
  absl::StatusOr<std::unique_ptr<LabelPublisher>> p =
      LabelPublisher::Create(Auto(), &client_);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(NodeFeatureWriterTest, OnAsksNoDiscoveryAndRefusesANodePatchBeside) {
  LabelOptions options = Auto();
  options.node_feature_api = NodeFeatureApi::kOn;
  absl::StatusOr<std::unique_ptr<LabelPublisher>> p =
      LabelPublisher::Create(options, &client_);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE((*p)->writes_node_feature());
  EXPECT_TRUE(transport_.requests().empty());

  options.node_name = "n1";
  p = LabelPublisher::Create(options, &client_);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  options.node_name = "";
  options.feature_node = "";
  p = LabelPublisher::Create(options, &client_);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("NODE_NAME"));
  options.feature_node = "n1";
  options.feature_namespace = "Bad_NS";
  p = LabelPublisher::Create(options, &client_);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("Bad_NS"));
}

// With a thread (the daemon), Create asks nothing: the thread asks before
// its first write, retrying, and the caller never waits for the API server.
TEST_F(NodeFeatureWriterTest, TheThreadAsksAndRetriesAndPublishNeverWaits) {
  char dir[] = "/tmp/gpulet-nf-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  LabelOptions options = Auto();
  options.output_file = std::string(dir) + "/gfd";
  options.node_name = "n1";
  options.background_patch = true;
  options.retry = absl::Milliseconds(1);
  options.machine_type_file = "";
  options.sysfs_root = dir;
  transport_.AddResponse(403, kForbidden);  // asked again after `retry`
  transport_.AddResponse(200, Served().dump());
  transport_.AddResponse(404, kNotFound);
  transport_.AddResponse(201, "{}");
  {
    absl::StatusOr<std::unique_ptr<LabelPublisher>> p =
        LabelPublisher::Create(options, &client_);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE(transport_.requests().empty());
    device::Node node;
    ASSERT_TRUE((*p)->Publish(node, config::Config{}).ok());
    // Polls the condition; no timing is asserted.
    while (transport_.requests().size() < 4) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  EXPECT_EQ(transport_.requests()[0].path, "/apis/nfd.k8s-sigs.io/v1alpha1");
  EXPECT_EQ(transport_.requests()[1].path, "/apis/nfd.k8s-sigs.io/v1alpha1");
  EXPECT_EQ(transport_.requests()[3].method, "POST");
  EXPECT_EQ(transport_.requests()[3].path, kPath);
  // Neither the file nor the Node patch.
  EXPECT_FALSE(std::filesystem::exists(options.output_file));
  EXPECT_EQ(transport_.requests().size(), 4u);
  std::filesystem::remove_all(dir);
}

TEST_F(NodeFeatureWriterTest, TheThreadWritesTheFileWhenNotServed) {
  char dir[] = "/tmp/gpulet-nf-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  LabelOptions options = Auto();
  options.output_file = std::string(dir) + "/gfd";
  options.background_patch = true;
  options.machine_type_file = "";
  options.sysfs_root = dir;
  transport_.AddResponse(404, kNotFound);
  absl::StatusOr<std::unique_ptr<LabelPublisher>> p =
      LabelPublisher::Create(options, &client_);
  ASSERT_TRUE(p.ok()) << p.status();
  device::Node node;
  ASSERT_TRUE((*p)->Publish(node, config::Config{}).ok());
  while (!std::filesystem::exists(options.output_file)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Chosen: the next Publish writes the file itself.
  std::filesystem::remove(options.output_file);
  ASSERT_TRUE((*p)->Publish(node, config::Config{}).ok());
  EXPECT_TRUE(std::filesystem::exists(options.output_file));
  EXPECT_EQ(transport_.requests().size(), 1u);
  p->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpulet::daemon
