#include "src/dra/slices/publisher.h"

#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/clock.h"
#include "src/net/kube/transport.h"

namespace gpulet::draslice {
namespace {

using Json = nlohmann::json;

// The API server's resourceslices collection in memory: list (with the
// node and driver field selector), create, replace with a resourceVersion
// check (409 when stale), delete. `conflicts` answers that many writes 409
// first, as if another writer got in.
class FakeSlices final : public kube::Transport {
 public:
  absl::StatusOr<kube::Response> Do(const kube::Request& r,
                                    std::stop_token = {}) override {
    ++requests[r.method];
    const std::string base = kResourceSlicesPath;
    if (r.method == "GET") {
      Json items = Json::array();
      for (const auto& [name, slice] : slices) {
        const std::string want = absl::StrCat(
            "spec.nodeName%3D", slice["spec"]["nodeName"].get<std::string>());
        if (absl::StrContains(r.path, want)) items.push_back(slice);
      }
      return Ok({{"metadata", {{"resourceVersion", "1"}}}, {"items", items}});
    }
    if (r.method != "DELETE" && conflicts > 0) {
      --conflicts;
      return kube::Response{.status = 409, .body = Status(409, "Conflict")};
    }
    const std::string name =
        r.path.size() > base.size() ? r.path.substr(base.size() + 1) : "";
    if (r.method == "DELETE") {
      if (slices.erase(name) == 0) return NotFound();
      return Ok({{"kind", "Status"}});
    }
    Json body = Json::parse(r.body);
    const std::string named = body["metadata"]["name"];
    if (r.method == "POST") {
      if (slices.contains(named)) {
        return kube::Response{.status = 409,
                              .body = Status(409, "AlreadyExists")};
      }
    } else if (!slices.contains(name)) {
      return NotFound();
    } else if (slices[name]["metadata"]["resourceVersion"] !=
               body["metadata"]["resourceVersion"]) {
      return kube::Response{.status = 409, .body = Status(409, "Conflict")};
    }
    body["metadata"]["resourceVersion"] = std::to_string(++version_);
    slices[named] = body;
    return Ok(body);
  }
  absl::StatusOr<kube::Response> Stream(const kube::Request&,
                                        const kube::ChunkFn&,
                                        std::stop_token) override {
    return absl::UnimplementedError("no watch here");
  }

  std::map<std::string, Json> slices;
  std::map<std::string, int> requests;
  int conflicts = 0;

 private:
  static std::string Status(int code, const std::string& reason) {
    return Json({{"kind", "Status"},
                 {"code", code},
                 {"reason", reason},
                 {"message", reason}})
        .dump();
  }
  static kube::Response Ok(const Json& body) {
    return {.status = 200, .body = body.dump()};
  }
  static kube::Response NotFound() {
    return {.status = 404, .body = Status(404, "NotFound")};
  }
  int version_ = 100;
};

device::Gpu Gpu(unsigned index) {
  device::Gpu gpu;
  gpu.index = index;
  gpu.uuid = absl::StrCat("GPU-", index);
  gpu.bus_id = absl::StrFormat("00000000:%02X:00.0", index);
  gpu.memory_total_bytes = 40ull << 30;
  return gpu;
}

NodeDevices Node(unsigned count) {
  NodeDevices in;
  in.node.driver_version = "550.54.15";
  for (unsigned i = 0; i < count; ++i) in.node.gpus.push_back(Gpu(i));
  return in;
}

class PublisherTest : public ::testing::Test {
 protected:
  int64_t PoolGeneration(const std::string& name) {
    return server_.slices.at(name)["spec"]["pool"]["generation"];
  }

  FakeSlices server_;
  common::RealClock& clock_ = common::RealClock::Get();
  kube::Client client_{server_, clock_, {.qps = 0}};
  Publisher publisher_{client_, {.node_name = "n1"}};
};

TEST_F(PublisherTest, CreatesThenLeavesAnUnchangedPoolAlone) {
  ASSERT_TRUE(publisher_.Publish(Node(2)).ok());
  EXPECT_EQ(server_.slices.size(), 1u);
  EXPECT_EQ(PoolGeneration("n1-gpu.nvidia.com-0"), 0);
  EXPECT_EQ(publisher_.generation(), 0);
  ASSERT_TRUE(publisher_.Publish(Node(2)).ok());
  EXPECT_EQ(server_.requests["POST"], 1);
  EXPECT_EQ(server_.requests["PUT"], 0);

  // A fresh publisher (gpulet restarted) finds the pool unchanged too.
  Publisher again(client_, {.node_name = "n1"});
  ASSERT_TRUE(again.Publish(Node(2)).ok());
  EXPECT_EQ(again.generation(), 0);
  EXPECT_EQ(server_.requests["PUT"], 0);
}

TEST_F(PublisherTest, AChangeBumpsTheGenerationOfEverySlice) {
  ASSERT_TRUE(publisher_.Publish(Node(2)).ok());
  NodeDevices sick = Node(2);
  sick.unhealthy = {"gpu-1"};
  ASSERT_TRUE(publisher_.Publish(sick).ok());
  EXPECT_EQ(PoolGeneration("n1-gpu.nvidia.com-0"), 1);
  EXPECT_EQ(server_.slices.at("n1-gpu.nvidia.com-0")["spec"]["devices"].size(),
            1u);
  ASSERT_TRUE(publisher_.Publish(Node(2)).ok());
  EXPECT_EQ(PoolGeneration("n1-gpu.nvidia.com-0"), 2);
  EXPECT_EQ(server_.requests["PUT"], 2);
}

TEST_F(PublisherTest, GrowsAndShrinksAcrossSlices) {
  ASSERT_TRUE(publisher_.Publish(Node(200)).ok());
  ASSERT_EQ(server_.slices.size(), 2u);
  EXPECT_EQ(PoolGeneration("n1-gpu.nvidia.com-1"), 0);
  ASSERT_TRUE(publisher_.Publish(Node(3)).ok());
  ASSERT_EQ(server_.slices.size(), 1u);
  EXPECT_EQ(PoolGeneration("n1-gpu.nvidia.com-0"), 1);
  EXPECT_EQ(server_.slices.at(
                "n1-gpu.nvidia.com-0")["spec"]["pool"]["resourceSliceCount"],
            1);
}

TEST_F(PublisherTest, StartsAboveAGenerationLeftOnTheServer) {
  Publisher earlier(client_, {.node_name = "n1"});
  ASSERT_TRUE(earlier.Publish(Node(1)).ok());
  ASSERT_TRUE(earlier.Publish(Node(2)).ok());
  ASSERT_TRUE(earlier.Publish(Node(1)).ok());
  ASSERT_EQ(PoolGeneration("n1-gpu.nvidia.com-0"), 2);
  ASSERT_TRUE(publisher_.Publish(Node(3)).ok());
  EXPECT_EQ(PoolGeneration("n1-gpu.nvidia.com-0"), 3);
}

TEST_F(PublisherTest, ConflictsAreRetriedWithAFreshList) {
  ASSERT_TRUE(publisher_.Publish(Node(1)).ok());
  server_.conflicts = 2;
  ASSERT_TRUE(publisher_.Publish(Node(2)).ok());
  EXPECT_EQ(server_.slices.at("n1-gpu.nvidia.com-0")["spec"]["devices"].size(),
            2u);
  EXPECT_EQ(server_.requests["GET"], 4);

  server_.conflicts = 100;
  EXPECT_EQ(publisher_.Publish(Node(3)).code(), absl::StatusCode::kAborted);
}

TEST_F(PublisherTest, DeleteAllRemovesOnlyThisNodesSlices) {
  Publisher other(client_, {.node_name = "n2"});
  ASSERT_TRUE(other.Publish(Node(1)).ok());
  ASSERT_TRUE(publisher_.Publish(Node(200)).ok());
  ASSERT_EQ(server_.slices.size(), 3u);
  ASSERT_TRUE(publisher_.DeleteAll().ok());
  ASSERT_EQ(server_.slices.size(), 1u);
  EXPECT_TRUE(server_.slices.contains("n2-gpu.nvidia.com-0"));
  // Publishing again continues above the deleted pool's generation.
  ASSERT_TRUE(publisher_.Publish(Node(1)).ok());
  EXPECT_EQ(PoolGeneration("n1-gpu.nvidia.com-0"), 1);
}

TEST_F(PublisherTest, BadOptionsAreRefusedBeforeWriting) {
  Publisher bad(client_, {.node_name = "Not A Node"});
  EXPECT_EQ(bad.Publish(Node(1)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(server_.slices.empty());
}

TEST(ComparableSpecTest, DropsEmptyValuesAndTaintTimes) {
  EXPECT_EQ(
      ComparableSpec(Json::parse(
          R"({"devices":[{"name":"a","attributes":{},
                    "taints":[{"key":"k","timeAdded":"2026-01-01T00:00:00Z"}]}],
                    "sharedCounters":[]})")),
      Json::parse(R"({"devices":[{"name":"a","taints":[{"key":"k"}]}]})"));
}

}  // namespace
}  // namespace gpulet::draslice
