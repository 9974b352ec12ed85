#include "src/dra/kubelet/checkpoint.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"

namespace gpulet::dra {
namespace {

using ::testing::HasSubstr;

PreparedClaims Sample() {
  PreparedClaim a;
  a.ref = {.namespace_name = "ns", .name = "a", .uid = "uid-a"};
  a.cdi_spec_path = "/run/cdi/k8s.gpu.nvidia.com-claim_uid-a.json";
  PreparedDevice d;
  d.requests = {"r1", "r2"};
  d.pool = "node";
  d.device = "gpu-0";
  d.cdi_device_ids = {"k8s.gpu.nvidia.com/claim=uid-a-gpu-0"};
  a.devices.push_back(d);
  d.device = "gpu-1-mig-19-0-1";
  d.share_id = "share";
  a.devices.push_back(d);
  PreparedClaim b = a;
  b.ref = {.namespace_name = "other", .name = "b", .uid = "uid-b"};
  b.devices.resize(1);
  b.sharing = {.strategy = "MPS",
               .interval = "",
               .active_thread_percentage = 30,
               .pinned_memory_limit = int64_t{10} << 30,
               .per_device_pinned_memory_limit = {{"0", int64_t{5} << 30}}};
  b.uuids = {"GPU-0000"};
  PreparedClaim c = b;
  c.ref.uid = "uid-c";
  c.sharing = ClaimSharing();
  c.sharing.strategy = "TimeSlicing";
  c.sharing.interval = "Long";
  c.uuids = {"GPU-0000", "MIG-aaaa"};
  return {{"uid-a", a}, {"uid-b", b}, {"uid-c", c}};
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dra-ckpt-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/checkpoint.json";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
  std::string path_;
};

TEST_F(CheckpointTest, RoundTrips) {
  ASSERT_TRUE(SaveCheckpoint(path_, Sample()).ok());
  absl::StatusOr<PreparedClaims> got = LoadCheckpoint(path_);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Sample());
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(CheckpointTest, MissingFileIsEmpty) {
  absl::StatusOr<PreparedClaims> got = LoadCheckpoint(path_);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->empty());
}

TEST_F(CheckpointTest, CorruptFilesAreErrorsNamingThePath) {
  std::string good = EncodeCheckpoint(Sample());
  std::string edited = good;
  edited.replace(edited.find("gpu-0"), 5, "gpu-7");
  for (const std::string& text :
       {std::string("{"), good.substr(0, good.size() / 2), edited,
        std::string("{\"version\": 2, \"claims\": {}}"), std::string("[]")}) {
    ASSERT_TRUE(common::WriteFileAtomic(path_, text).ok());
    absl::StatusOr<PreparedClaims> got = LoadCheckpoint(path_);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << text;
    EXPECT_THAT(got.status().message(), HasSubstr("checkpoint " + path_));
  }
}

}  // namespace
}  // namespace gpulet::dra
