#include "src/plugin/daemon/label_publisher.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/base/common/file_util.h"
#include "src/model/labels/node_patch.h"
#include "src/net/kube/client.h"
#include "src/net/testing/fake_transport.h"

namespace gpulet::daemon {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

class TempDir {
 public:
  TempDir() {
    char dir[] = "/tmp/gpulet-labels-XXXXXX";
    EXPECT_NE(::mkdtemp(dir), nullptr);
    path_ = dir;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

device::Node OneT4() {
  device::Node node;
  node.driver_version = "535.161.08";
  node.cuda_driver_version = 12020;
  device::Gpu gpu;
  gpu.name = "Tesla T4";
  gpu.bus_id = "00000000:3B:00.0";
  gpu.memory_total_bytes = 15360ull << 20;
  gpu.cc_major = 7;
  gpu.cc_minor = 5;
  node.gpus.push_back(gpu);
  return node;
}

class LabelPublisherTest : public ::testing::Test {
 protected:
  LabelPublisherTest() : client_(transport_, clock_, {.qps = 0}) {}

  // The body of the n-th request, as JSON.
  Json Body(size_t n) const {
    return Json::parse(transport_.requests().at(n).body);
  }
  // Waits until the transport has been asked `n` requests (polls the
  // condition; no timing is asserted).
  void WaitRequests(size_t n) const {
    while (transport_.requests().size() < n) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  TempDir dir_;
  common::FakeClock clock_;
  kube::FakeTransport transport_;
  kube::Client client_;
};

TEST_F(LabelPublisherTest, WritesTheFeatureFileSortedWithFacts) {
  std::filesystem::create_directories(dir_.path() +
                                      "/sys/bus/pci/devices/0000:3b:00.0");
  ASSERT_TRUE(
      common::WriteFileAtomic(
          dir_.path() + "/sys/bus/pci/devices/0000:3b:00.0/class", "0x030200\n")
          .ok());
  ASSERT_TRUE(
      common::WriteFileAtomic(dir_.path() + "/product", "DGX H100\n").ok());
  LabelOptions options;
  options.output_file = dir_.path() + "/gfd";
  options.sysfs_root = dir_.path() + "/sys";
  options.machine_type_file = dir_.path() + "/product";
  LabelPublisher publisher(options, nullptr);
  absl::StatusOr<labels::Labels> labels =
      publisher.Publish(OneT4(), config::Config{});
  ASSERT_TRUE(labels.ok()) << labels.status();
  absl::StatusOr<std::string> text = common::ReadFile(options.output_file);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("nvidia.com/gpu.machine=DGX-H100\n"));
  EXPECT_THAT(*text, HasSubstr("nvidia.com/gpu.mode=compute\n"));
  EXPECT_THAT(*text, HasSubstr("nvidia.com/gpu.product=Tesla-T4\n"));
  EXPECT_THAT(*text, HasSubstr("nvidia.com/gfd.timestamp="));
  EXPECT_EQ(*text, labels::FeatureFileText(*labels));
}

TEST_F(LabelPublisherTest, MissingFactsAreUnknownAndNoTimestampOnRequest) {
  LabelOptions options;
  options.sysfs_root = dir_.path() + "/no-sys";
  options.machine_type_file = dir_.path() + "/no-product";
  options.timestamp = false;
  LabelPublisher publisher(options, nullptr);
  labels::Labels labels = publisher.Compute(OneT4(), config::Config{});
  EXPECT_EQ(labels.at("nvidia.com/gpu.machine"), "unknown");
  EXPECT_EQ(labels.at("nvidia.com/gpu.mode"), "unknown");
  EXPECT_FALSE(labels.contains("nvidia.com/gfd.timestamp"));
}

TEST_F(LabelPublisherTest, AnUnwritableDirectoryIsAnErrorNamingThePath) {
  LabelOptions options;
  options.output_file = dir_.path() + "/missing/gfd";
  LabelPublisher publisher(options, nullptr);
  absl::StatusOr<labels::Labels> labels =
      publisher.Publish(OneT4(), config::Config{});
  ASSERT_FALSE(labels.ok());
  EXPECT_THAT(labels.status().message(), HasSubstr(options.output_file));
  EXPECT_THAT(labels.status().message(), HasSubstr("node labels"));
}

TEST_F(LabelPublisherTest, PatchSetsOwnedLabelsRemovesStaleOnesOnly) {
  transport_.AddResponse(200, Json{{"kind", "Node"},
                                   {"metadata",
                                    {{"name", "n1"},
                                     {"labels",
                                      {{"team", "a"},
                                       {"nvidia.com/gpu.count", "2"},
                                       {"nvidia.com/gpu.replicas", "4"}}},
                                     {"annotations",
                                      {{labels::kOwnedLabelsAnnotation,
                                        "nvidia.com/gpu.count,"
                                        "nvidia.com/gpu.replicas"}}}}}}
                                  .dump());
  transport_.AddResponse(200, R"({"kind":"Node"})");
  LabelOptions options;
  options.node_name = "n1";
  LabelPublisher publisher(options, &client_);
  ASSERT_TRUE(publisher
                  .PatchNode({{"nvidia.com/gpu.count", "4"},
                              {"nvidia.com/gfd.timestamp", "17"}})
                  .ok());
  ASSERT_EQ(transport_.requests().size(), 2u);
  EXPECT_EQ(transport_.requests()[0].method, "GET");
  EXPECT_EQ(transport_.requests()[0].path, "/api/v1/nodes/n1");
  EXPECT_EQ(transport_.requests()[1].method, "PATCH");
  EXPECT_EQ(transport_.requests()[1].content_type,
            "application/merge-patch+json");
  EXPECT_EQ(
      Body(1),
      (Json{{"metadata",
             {{"labels",
               {{"nvidia.com/gpu.count", "4"},
                {"nvidia.com/gpu.replicas", nullptr}}},
              {"annotations",
               {{labels::kOwnedLabelsAnnotation, "nvidia.com/gpu.count"}}}}}}));
}

TEST_F(LabelPublisherTest, AnUpToDateNodeIsNotPatched) {
  transport_.AddResponse(
      200,
      Json{{"metadata",
            {{"labels", {{"nvidia.com/gpu.count", "4"}}},
             {"annotations",
              {{labels::kOwnedLabelsAnnotation, "nvidia.com/gpu.count"}}}}}}
          .dump());
  LabelOptions options;
  options.node_name = "n1";
  LabelPublisher publisher(options, &client_);
  ASSERT_TRUE(publisher.PatchNode({{"nvidia.com/gpu.count", "4"}}).ok());
  EXPECT_EQ(transport_.requests().size(), 1u);
}

TEST_F(LabelPublisherTest, PatchErrorsNameTheNode) {
  transport_.AddResponse(
      403,
      R"({"kind":"Status","status":"Failure","message":"nodes is forbidden","reason":"Forbidden","code":403})");
  LabelOptions options;
  options.node_name = "n1";
  LabelPublisher publisher(options, &client_);
  absl::Status s = publisher.PatchNode({{"nvidia.com/gpu.count", "4"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("node n1"));
  EXPECT_THAT(s.message(), HasSubstr("forbidden"));
}

TEST_F(LabelPublisherTest, PublishPatchesInTheBackgroundAndRetries) {
  transport_.AddResponse(
      403,
      R"({"kind":"Status","status":"Failure","message":"not yet","reason":"Forbidden","code":403})");
  transport_.AddResponse(200, R"({"metadata":{"name":"n1"}})");
  transport_.AddResponse(200, R"({"metadata":{"name":"n1"}})");
  LabelOptions options;
  options.node_name = "n1";
  options.retry = absl::Milliseconds(1);
  options.sysfs_root = dir_.path();
  options.machine_type_file = "";
  LabelPublisher publisher(options, &client_);
  ASSERT_TRUE(publisher.Publish(OneT4(), config::Config{}).ok());
  WaitRequests(3);
  EXPECT_EQ(transport_.requests()[2].method, "PATCH");
  Json labels = Body(2)["metadata"]["labels"];
  EXPECT_EQ(labels["nvidia.com/gpu.product"], "Tesla-T4");
  EXPECT_FALSE(labels.contains("nvidia.com/gfd.timestamp"));
}

TEST(LabelPublisherCreateTest, ABadNodeNameIsRefused) {
  LabelOptions options;
  options.node_name = "Not_A_Node";
  absl::StatusOr<std::unique_ptr<LabelPublisher>> p =
      LabelPublisher::Create(options);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("Not_A_Node"));
}

TEST(LabelPublisherCreateTest, AMissingKubeconfigIsAnErrorNamingIt) {
  LabelOptions options;
  options.node_name = "n1";
  options.kubeconfig = "/nonexistent/kubeconfig";
  absl::StatusOr<std::unique_ptr<LabelPublisher>> p =
      LabelPublisher::Create(options);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("/nonexistent/kubeconfig"));
}

}  // namespace
}  // namespace gpulet::daemon
