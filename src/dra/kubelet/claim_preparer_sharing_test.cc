// ClaimPreparer's sharing (fixture in
// src/dra/testing/claim_preparer_fixture.h): time-slicing and MPS applied,
// released and applied again on restart, the specs of an earlier release
// written again at start, and memory shares of one GPU prepared and
// unprepared per claim.
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"
#include "src/dra/kubelet/claim_cdi.h"
#include "src/dra/kubelet/claim_preparer.h"
#include "src/dra/testing/claim_preparer_fixture.h"
#include "src/dra/testing/test_claims.h"
#include "src/model/cdi/spec_builder.h"
#include "src/model/cdi/spec_codec.h"
#include "src/model/cdi/spec_file.h"
#include "src/model/testing/test_hooks.h"

namespace gpulet::dra {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_claims::Ref;
using testing_claims::TestNode;
using testing_claims::TestSpec;

// The time-slice and the MPS daemon (through the SharingApplier): applied
// on prepare with the claim's device UUIDs, released on unprepare, applied
// again for checkpointed claims when gpulet restarts; a failure to apply
// fails the claim and leaves nothing behind.
TEST_F(ClaimPreparerTest, SharingIsAppliedReleasedAndAppliedAgainOnRestart) {
  api_.Add(Ref("ts"), {"gpu-2", "gpu-1-mig-19-6-1"});
  api_.claims["ns/ts"]["status"]["allocation"]["devices"]["config"] =
      testing_claims::SharingConfig(
          {{"strategy", "TimeSlicing"},
           {"timeSlicingConfig", {{"interval", "Long"}}}});
  api_.Add(Ref("mps"), {});
  api_.AddShare(Ref("mps"), "gpu-0", "0b0e7f6c-0000-4000-8000-00000000000a",
                "4Gi");
  api_.claims["ns/mps"]["status"]["allocation"]["devices"]["config"] =
      testing_claims::SharingConfig({{"strategy", "MPS"}});
  {
    auto p = Start();
    auto got = p->Prepare({Ref("ts"), Ref("mps")});
    ASSERT_TRUE(got["uid-ts"].status.ok()) << got["uid-ts"].status;
    ASSERT_TRUE(got["uid-mps"].status.ok()) << got["uid-mps"].status;
    EXPECT_THAT(sharing_.calls,
                ElementsAre("apply uid-ts TimeSlicing Long GPU-2222 MIG-aaaa",
                            "apply uid-mps MPS  GPU-0000"));
    // MPS enforces the share: the client's pinned memory limit.
    absl::StatusOr<cdi::Spec> spec =
        cdi::ReadSpecFile(ClaimSpecPath(dir_ + "/cdi", "uid-mps"));
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_THAT(spec->devices[0].edits.env,
                ElementsAre("GPULET_GPU_MEMORY_LIMIT=4096",
                            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M",
                            "FAKE_SHARING=uid-mps"));
  }
  sharing_.calls.clear();
  auto restarted = Start();
  EXPECT_THAT(sharing_.calls,
              ElementsAre("apply uid-mps MPS  GPU-0000",
                          "apply uid-ts TimeSlicing Long GPU-2222 MIG-aaaa"));
  sharing_.calls.clear();
  EXPECT_TRUE(restarted->Unprepare({Ref("ts")})["uid-ts"].ok());
  EXPECT_TRUE(restarted->Unprepare({Ref("ts")})["uid-ts"].ok());
  EXPECT_THAT(sharing_.calls, ElementsAre("release uid-ts"));

  api_.Add(Ref("fails"), {"gpu-2"});
  api_.claims["ns/fails"]["status"]["allocation"]["devices"]["config"] =
      testing_claims::SharingConfig({{"strategy", "TimeSlicing"}});
  sharing_.fail = true;
  auto failed = restarted->Prepare({Ref("fails")});
  EXPECT_THAT(failed["uid-fails"].status.message(),
              HasSubstr("claim ns/fails: nvidia-smi: exit status 1"));
  EXPECT_FALSE(restarted->Prepared().contains("uid-fails"));
  EXPECT_EQ(SpecFiles(),
            std::set<std::string>{"k8s.gpu.nvidia.com-claim_uid-mps.json"});
}

// Upgrade: what an earlier release wrote (claim specs whose hook has no
// environment, an MPS claim's node-wide /dev/shm, a checkpoint without
// UUIDs or consumed memory) is written again at start, from the
// checkpoint, the node spec of this start and the sharing applied again.
// A claim whose sharing cannot be applied again keeps its spec.
TEST_F(ClaimPreparerTest, SpecsOfAnEarlierReleaseAreWrittenAgainAtStart) {
  cdi::Spec old_node = TestSpec();
  cdi::Hook hook;
  hook.hook_name = "createContainer";
  hook.path = "/usr/bin/gpulet-runtime";
  hook.args = {"gpulet-runtime", "hook", "update-ldcache", "--folder", "/old"};
  old_node.edits.hooks = {hook};
  cdi::Spec new_node = old_node;
  new_node.edits.hooks[0].args.back() = "/new";
  // Every claim spec's hooks get an env and a timeout, whatever the node
  // spec's have.
  cdi::Spec old_written = old_node;
  cdi::SetHookDefaults(old_written);
  cdi::Spec new_written = new_node;
  cdi::SetHookDefaults(new_written);
  auto start =
      [&](const cdi::Spec& node_spec) -> std::unique_ptr<ClaimPreparer> {
    auto p = ClaimPreparer::Create(Options(), api_.Getter());
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return nullptr;
    (*p)->SetNode(TestNode(), node_spec);
    return *std::move(p);
  };
  api_.Add(Ref("a"), {"gpu-2", "gpu-1-mig-19-6-1"});
  api_.AddShare(Ref("mps"), "gpu-0", "0b0e7f6c-0000-4000-8000-00000000000a",
                "4Gi");
  api_.claims["ns/mps"]["status"]["allocation"]["devices"]["config"] =
      testing_claims::SharingConfig({{"strategy", "MPS"}});
  const std::string a_path = ClaimSpecPath(dir_ + "/cdi", "uid-a");
  const std::string mps_path = ClaimSpecPath(dir_ + "/cdi", "uid-mps");
  {
    auto p = start(old_node);
    ASSERT_NE(p, nullptr);
    auto got = p->Prepare({Ref("a"), Ref("mps")});
    ASSERT_TRUE(got["uid-a"].status.ok()) << got["uid-a"].status;
    ASSERT_TRUE(got["uid-mps"].status.ok()) << got["uid-mps"].status;
  }
  // An earlier release's files: bare hooks, and a node-wide /dev/shm.
  for (const std::string& path : {a_path, mps_path}) {
    absl::StatusOr<cdi::Spec> stale = cdi::ReadSpecFile(path);
    ASSERT_TRUE(stale.ok()) << stale.status();
    for (cdi::Hook& h : stale->edits.hooks) {
      h.env.clear();
      h.timeout.reset();
    }
    if (path == mps_path) {
      cdi::Mount shared;
      shared.host_path = "/run/nvidia/mps/shm";
      shared.container_path = "/dev/shm";
      stale->devices[0].edits.mounts.push_back(shared);
    }
    ASSERT_TRUE(common::WriteFileAtomic(
                    path, cdi::FormatSpec(*stale, cdi::Format::kJson), {})
                    .ok());
  }
  absl::StatusOr<PreparedClaims> saved =
      LoadCheckpoint(dir_ + "/checkpoint.json");
  ASSERT_TRUE(saved.ok()) << saved.status();
  for (auto& [uid, claim] : *saved) {
    for (PreparedDevice& d : claim.devices) {
      d.uuid.clear();
      d.consumed_memory.reset();
    }
  }
  ASSERT_TRUE(SaveCheckpoint(dir_ + "/checkpoint.json", *saved).ok());

  auto restarted = start(new_node);
  ASSERT_NE(restarted, nullptr);
  absl::StatusOr<cdi::Spec> a = cdi::ReadSpecFile(a_path);
  absl::StatusOr<cdi::Spec> mps = cdi::ReadSpecFile(mps_path);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(mps.ok()) << mps.status();
  EXPECT_EQ(a->edits.hooks, new_written.edits.hooks);
  EXPECT_EQ(mps->edits.hooks, new_written.edits.hooks);
  ASSERT_EQ(a->devices.size(), 2u);
  EXPECT_EQ(a->devices[1].edits.device_nodes[0].path,
            "/dev/nvidia-caps/nvidia-cap21");
  ASSERT_EQ(mps->devices.size(), 1u);
  ASSERT_EQ(mps->devices[0].edits.mounts.size(), 1u);
  EXPECT_EQ(mps->devices[0].edits.mounts[0].host_path, "/run/mps/uid-mps");
  EXPECT_THAT(mps->devices[0].edits.env,
              ElementsAre("GPULET_GPU_MEMORY_LIMIT=4096",
                          "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M",
                          "FAKE_SHARING=uid-mps"));
  restarted.reset();

  // The MPS claim's sharing fails on the next start: its spec stays.
  absl::StatusOr<std::string> before = common::ReadFile(mps_path);
  ASSERT_TRUE(before.ok());
  sharing_.fail = true;
  auto failed = start(old_node);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(common::ReadFile(mps_path).value_or(""), *before);
  EXPECT_EQ(cdi::ReadSpecFile(a_path)->edits.hooks, old_written.edits.hooks);
}

TEST_F(ClaimPreparerTest, TwoSharesOfOneGpuAreOneGpuToTheApplier) {
  api_.AddShare(Ref("two"), "gpu-0", "0b0e7f6c-0000-4000-8000-00000000000b",
                "2Gi");
  api_.AddShare(Ref("two"), "gpu-0", "0b0e7f6c-0000-4000-8000-00000000000c",
                "1Gi");
  api_.claims["ns/two"]["status"]["allocation"]["devices"]["config"] =
      testing_claims::SharingConfig({{"strategy", "MPS"}});
  auto p = Start();
  auto got = p->Prepare({Ref("two")});
  ASSERT_TRUE(got["uid-two"].status.ok()) << got["uid-two"].status;
  EXPECT_EQ(got["uid-two"].devices.size(), 2u);
  EXPECT_THAT(sharing_.calls, ElementsAre("apply uid-two MPS  GPU-0000"));
}

TEST_F(ClaimPreparerTest, WithoutAnApplierSharingClaimsFailNamingIt) {
  api_.Add(Ref("ts"), {"gpu-0"});
  api_.claims["ns/ts"]["status"]["allocation"]["devices"]["config"] =
      testing_claims::SharingConfig({{"strategy", "TimeSlicing"}});
  PreparerOptions options = Options();
  options.sharing = nullptr;
  auto p = Start(options);
  EXPECT_THAT(p->Prepare({Ref("ts")})["uid-ts"].status.message(),
              HasSubstr("claim ns/ts: sharing strategy TimeSlicing is not "
                        "available on this node"));
}

// Memory shares (DRAConsumableCapacity): one GPU prepared for several
// claims, each with its share's limit; one claim may hold two shares of it.
// Unpreparing one claim leaves the others' specs and entries alone.
TEST_F(ClaimPreparerTest, SharesOfOneGpuArePreparedAndUnpreparedPerClaim) {
  const std::string s1 = "0b0e7f6c-0000-4000-8000-000000000001";
  const std::string s2 = "0b0e7f6c-0000-4000-8000-000000000002";
  const std::string s3 = "0b0e7f6c-0000-4000-8000-000000000003";
  api_.AddShare(Ref("a"), "gpu-0", s1, "4Gi");
  api_.AddShare(Ref("b"), "gpu-0", s2, "2Gi");
  api_.AddShare(Ref("b"), "gpu-0", s3, "1Gi");
  auto p = Start();
  auto got = p->Prepare({Ref("a"), Ref("b")});
  ASSERT_TRUE(got["uid-a"].status.ok()) << got["uid-a"].status;
  ASSERT_TRUE(got["uid-b"].status.ok()) << got["uid-b"].status;
  ASSERT_EQ(got["uid-a"].devices.size(), 1u);
  EXPECT_EQ(got["uid-a"].devices[0].share_id, s1);
  EXPECT_THAT(got["uid-a"].devices[0].cdi_device_ids,
              ElementsAre("k8s.gpu.nvidia.com/claim=uid-a-gpu-0-" + s1));
  ASSERT_EQ(got["uid-b"].devices.size(), 2u);
  EXPECT_EQ(got["uid-b"].devices[1].share_id, s3);

  auto env_of = [&](const std::string& uid) {
    std::map<std::string, std::vector<std::string>> out;
    absl::StatusOr<cdi::Spec> spec =
        cdi::ReadSpecFile(ClaimSpecPath(dir_ + "/cdi", uid));
    EXPECT_TRUE(spec.ok()) << spec.status();
    if (spec.ok()) {
      for (const cdi::Device& d : spec->devices) out[d.name] = d.edits.env;
    }
    return out;
  };
  EXPECT_EQ(env_of("uid-a")["uid-a-gpu-0-" + s1],
            std::vector<std::string>{"GPULET_GPU_MEMORY_LIMIT=4096"});
  std::map<std::string, std::vector<std::string>> b = env_of("uid-b");
  EXPECT_EQ(b["uid-b-gpu-0-" + s2],
            std::vector<std::string>{"GPULET_GPU_MEMORY_LIMIT=2048"});
  EXPECT_EQ(b["uid-b-gpu-0-" + s3],
            std::vector<std::string>{"GPULET_GPU_MEMORY_LIMIT=1024"});

  EXPECT_TRUE(p->Unprepare({Ref("a")})["uid-a"].ok());
  EXPECT_EQ(SpecFiles(),
            std::set<std::string>{"k8s.gpu.nvidia.com-claim_uid-b.json"});
  // A restart finds b's two shares as answered, without asking again.
  auto restarted = Start();
  ASSERT_TRUE(restarted->Prepared().contains("uid-b"));
  EXPECT_FALSE(restarted->Prepared().contains("uid-a"));
  auto again = restarted->Prepare({Ref("b")});
  EXPECT_EQ(again["uid-b"].devices, got["uid-b"].devices);
  EXPECT_EQ(api_.gets["ns/b"], 1);
  EXPECT_EQ(env_of("uid-b"), b);
}

}  // namespace
}  // namespace gpulet::dra
