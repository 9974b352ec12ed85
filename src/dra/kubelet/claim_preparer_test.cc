// ClaimPreparer (fixture in src/dra/testing/claim_preparer_fixture.h):
// preparing claims into CDI specs and the checkpoint, answering every claim
// of a request, opaque config, unprepare, crashes between the steps, and
// random sequences against a model.
#include "src/dra/kubelet/claim_preparer.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"
#include "src/dra/kubelet/claim_cdi.h"
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
using testing_claims::kPool;
using testing_claims::Ref;
using testing_claims::TestNode;
using testing_claims::TestSpec;

TEST_F(ClaimPreparerTest, PreparesWritesTheSpecAndCheckpoints) {
  api_.Add(Ref("a"), {"gpu-0", "gpu-1-mig-19-6-1"});
  auto p = Start();
  auto got = p->Prepare({Ref("a")});
  ASSERT_EQ(got.size(), 1u);
  const PrepareResult& r = got["uid-a"];
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].device, "gpu-0");
  EXPECT_EQ(r.devices[0].pool, kPool);
  EXPECT_THAT(r.devices[0].requests, ElementsAre("req"));
  EXPECT_THAT(r.devices[0].cdi_device_ids,
              ElementsAre("k8s.gpu.nvidia.com/claim=uid-a-gpu-0"));
  EXPECT_THAT(r.devices[1].cdi_device_ids,
              ElementsAre("k8s.gpu.nvidia.com/claim=uid-a-gpu-1-mig-19-6-1"));

  absl::StatusOr<cdi::Spec> spec =
      cdi::ReadSpecFile(ClaimSpecPath(dir_ + "/cdi", "uid-a"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, "k8s.gpu.nvidia.com/claim");
  EXPECT_EQ(spec->edits, TestSpec().edits);
  ASSERT_EQ(spec->devices.size(), 2u);
  EXPECT_EQ(spec->devices[0].name, "uid-a-gpu-0");
  EXPECT_EQ(spec->devices[0].edits.device_nodes[0].path, "/dev/nvidia0");
  EXPECT_EQ(spec->devices[1].edits.device_nodes[0].path,
            "/dev/nvidia-caps/nvidia-cap21");

  absl::StatusOr<PreparedClaims> saved =
      LoadCheckpoint(dir_ + "/checkpoint.json");
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(*saved, p->Prepared());
  EXPECT_EQ(saved->at("uid-a").devices, r.devices);
}

// A hook without `env` runs with the container's environment
// (docs/runtime.md, "Threat model"): every claim spec gpulet writes, whole
// GPU, MIG device or shared, gives each of its hooks one, even when the
// node spec it is made from had a hook without.
TEST_F(ClaimPreparerTest, EveryHookOfEveryClaimSpecHasAnEnv) {
  cdi::Spec node_spec = TestSpec();
  const cdi::Hook bare{"createContainer",
                       "/usr/bin/gpulet-runtime",
                       {"gpulet-runtime", "hook", "update-ldcache"},
                       {},
                       std::nullopt};
  node_spec.edits.hooks = {bare};
  for (cdi::Device& d : node_spec.devices) d.edits.hooks = {bare};
  api_.Add(Ref("whole"), {"gpu-2"});
  api_.Add(Ref("mig"), {"gpu-1-mig-19-6-1"});
  api_.AddShare(Ref("mps"), "gpu-0", "0b0e7f6c-0000-4000-8000-00000000000d",
                "2Gi");
  api_.claims["ns/mps"]["status"]["allocation"]["devices"]["config"] =
      testing_claims::SharingConfig({{"strategy", "MPS"}});
  absl::StatusOr<std::unique_ptr<ClaimPreparer>> p =
      ClaimPreparer::Create(Options(), api_.Getter());
  ASSERT_TRUE(p.ok()) << p.status();
  (*p)->SetNode(TestNode(), node_spec);
  for (const auto& [uid, result] :
       (*p)->Prepare({Ref("whole"), Ref("mig"), Ref("mps")})) {
    ASSERT_TRUE(result.status.ok()) << uid << ": " << result.status;
  }
  ASSERT_EQ(SpecFiles().size(), 3u);
  for (const std::string& file : SpecFiles()) {
    absl::StatusOr<cdi::Spec> spec = cdi::ReadSpecFile(dir_ + "/cdi/" + file);
    ASSERT_TRUE(spec.ok()) << spec.status();
    ASSERT_FALSE(spec->edits.hooks.empty()) << file;
    ASSERT_FALSE(spec->devices.at(0).edits.hooks.empty()) << file;
    cdi::testing::ExpectEveryHookConfined(*spec);
  }
}

TEST_F(ClaimPreparerTest, PrepareTwiceAnswersTheSameWithoutAskingAgain) {
  api_.Add(Ref("a"), {"gpu-0"});
  auto p = Start();
  auto first = p->Prepare({Ref("a")});
  auto second = p->Prepare({Ref("a"), Ref("a")});
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second["uid-a"].devices, first["uid-a"].devices);
  EXPECT_EQ(api_.gets["ns/a"], 1);
}

// Records what the preparer reports.
struct RecordingObserver : ClaimObserver {
  void Prepared(const std::vector<ClaimRef>& claims,
                const std::map<std::string, PrepareResult>& results,
                absl::Duration took) override {
    prepared.push_back({claims, results});
    EXPECT_GE(took, absl::ZeroDuration());
  }
  void Unprepared(const std::vector<ClaimRef>& claims,
                  const std::map<std::string, absl::Status>& results,
                  absl::Duration) override {
    unprepared.push_back({claims, results});
  }
  std::vector<
      std::pair<std::vector<ClaimRef>, std::map<std::string, PrepareResult>>>
      prepared;
  std::vector<
      std::pair<std::vector<ClaimRef>, std::map<std::string, absl::Status>>>
      unprepared;
};

TEST_F(ClaimPreparerTest, TheObserverSeesEveryCallsClaimsAndAnswers) {
  api_.Add(Ref("a"), {"gpu-0"});
  RecordingObserver observer;
  PreparerOptions options = Options();
  options.observer = &observer;
  auto p = Start(options);
  auto got = p->Prepare({Ref("a"), Ref("missing")});
  ASSERT_EQ(observer.prepared.size(), 1u);
  EXPECT_EQ(observer.prepared[0].first,
            (std::vector<ClaimRef>{Ref("a"), Ref("missing")}));
  ASSERT_EQ(observer.prepared[0].second.size(), 2u);
  EXPECT_TRUE(observer.prepared[0].second.at("uid-a").status.ok());
  EXPECT_EQ(observer.prepared[0].second.at("uid-a").devices,
            got["uid-a"].devices);
  EXPECT_FALSE(observer.prepared[0].second.at("uid-missing").status.ok());
  // The claim as read comes with a claim this call prepared only.
  EXPECT_EQ(observer.prepared[0].second.at("uid-a").claim["metadata"]["uid"],
            "uid-a");
  EXPECT_TRUE(observer.prepared[0].second.at("uid-missing").claim.is_null());
  p->Prepare({Ref("a")});
  ASSERT_EQ(observer.prepared.size(), 2u);
  EXPECT_TRUE(observer.prepared[1].second.at("uid-a").status.ok());
  EXPECT_TRUE(observer.prepared[1].second.at("uid-a").claim.is_null());
  p->Unprepare({Ref("a")});
  ASSERT_EQ(observer.unprepared.size(), 1u);
  EXPECT_EQ(observer.unprepared[0].first, std::vector<ClaimRef>{Ref("a")});
  EXPECT_TRUE(observer.unprepared[0].second.at("uid-a").ok());
}

TEST_F(ClaimPreparerTest, EveryClaimIsAnsweredABadOneFailsAlone) {
  api_.Add(Ref("good"), {"gpu-0"});
  api_.Add(Ref("gone-gpu"), {"gpu-9"});
  api_.Add(Ref("bad-name"), {"tpu-0"});
  api_.Add(Ref("whole-mig-gpu"), {"gpu-1"});
  api_.Add(Ref("no-mig"), {"gpu-1-mig-19-5-1"});
  api_.Add(Ref("empty"), {});
  ClaimRef recreated = Ref("recreated");
  api_.Add(recreated, {"gpu-0"});
  recreated.uid = "uid-new";
  ClaimRef bad_uid = Ref("x");
  bad_uid.uid = "../../etc";
  auto p = Start();
  auto got = p->Prepare({Ref("good"), Ref("gone-gpu"), Ref("bad-name"),
                         Ref("whole-mig-gpu"), Ref("no-mig"), Ref("empty"),
                         Ref("missing"), recreated, bad_uid});
  ASSERT_EQ(got.size(), 9u);
  EXPECT_TRUE(got["uid-good"].status.ok());
  std::map<std::string, std::string> want = {
      {"uid-gone-gpu", "claim ns/gone-gpu: device gpu-9: no GPU with index 9"},
      {"uid-bad-name", "device \"tpu-0\""},
      {"uid-whole-mig-gpu", "GPU 1 is in MIG mode"},
      {"uid-no-mig", "device gpu-1-mig-19-5-1: GPU 1 has no MIG device"},
      {"uid-empty", "claim ns/empty: its allocation has no device of driver"},
      {"uid-missing", "claim ns/missing not found"},
      {"uid-new", "claim ns/recreated: metadata.uid"},
      {"../../etc", "claim ns/x: uid \"../../etc\""}};
  for (const auto& [uid, message] : want) {
    EXPECT_FALSE(got[uid].status.ok()) << uid;
    EXPECT_THAT(got[uid].status.message(), HasSubstr(message)) << uid;
  }
  EXPECT_EQ(p->Prepared().size(), 1u);
  EXPECT_EQ(SpecFiles(),
            std::set<std::string>{"k8s.gpu.nvidia.com-claim_uid-good.json"});
}

TEST_F(ClaimPreparerTest, OpaqueConfigIsAppliedOrFailsTheClaim) {
  api_.Add(Ref("mps"), {"gpu-0"});
  api_.Add(Ref("bad"), {"gpu-0"});
  api_.claims["ns/mps"]["status"]["allocation"]["devices"]["config"] =
      testing_claims::SharingConfig(
          {{"strategy", "MPS"},
           {"mpsConfig",
            {{"defaultActiveThreadPercentage", 50},
             {"defaultPinnedDeviceMemoryLimit", "10Gi"}}}});
  api_.claims["ns/bad"]["status"]["allocation"]["devices"]["config"] =
      testing_claims::SharingConfig({{"strategy", "Spatial"}});
  auto p = Start();
  auto got = p->Prepare({Ref("mps"), Ref("bad")});
  ASSERT_TRUE(got["uid-mps"].status.ok()) << got["uid-mps"].status;
  EXPECT_THAT(got["uid-bad"].status.message(),
              HasSubstr("claim ns/bad: opaque config [0]: sharing.strategy"));
  absl::StatusOr<cdi::Spec> spec =
      cdi::ReadSpecFile(ClaimSpecPath(dir_ + "/cdi", "uid-mps"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  // The limits are the claim's MPS daemon's (the applier's), not the
  // container's environment.
  EXPECT_THAT(spec->devices[0].edits.env, ElementsAre("FAKE_SHARING=uid-mps"));
  ASSERT_EQ(spec->devices[0].edits.mounts.size(), 1u);
  EXPECT_EQ(spec->devices[0].edits.mounts[0].container_path, "/mps/uid-mps");
  EXPECT_THAT(sharing_.calls, ElementsAre("apply uid-mps MPS  GPU-0000"));
  ASSERT_EQ(sharing_.applied.size(), 1u);
  EXPECT_EQ(sharing_.applied[0].active_thread_percentage, 50);
  EXPECT_EQ(sharing_.applied[0].pinned_memory_limit, int64_t{10} << 30);
}

TEST_F(ClaimPreparerTest, UnprepareIsIdempotentAndRemovesTheSpec) {
  api_.Add(Ref("a"), {"gpu-0"});
  api_.Add(Ref("b"), {"gpu-1-mig-9-0-4"});
  auto p = Start();
  p->Prepare({Ref("a"), Ref("b")});
  auto got = p->Unprepare({Ref("a"), Ref("never")});
  EXPECT_TRUE(got["uid-a"].ok());
  EXPECT_TRUE(got["uid-never"].ok());
  EXPECT_TRUE(p->Unprepare({Ref("a")})["uid-a"].ok());
  EXPECT_EQ(SpecFiles(),
            std::set<std::string>{"k8s.gpu.nvidia.com-claim_uid-b.json"});
  auto restarted = Start();
  EXPECT_EQ(restarted->Prepared().size(), 1u);
  EXPECT_TRUE(restarted->Prepared().contains("uid-b"));
}

// A crash after the checkpoint and before the answer: the kubelet never saw
// the answer and asks again; the restarted plugin answers from the
// checkpoint and reads nothing from the API server.
TEST_F(ClaimPreparerTest, CrashBetweenCheckpointAndAnswerPreparesOnce) {
  api_.Add(Ref("a"), {"gpu-0", "gpu-1-mig-9-0-4"});
  PreparerOptions crashing = Options();
  struct Crash {};
  crashing.after_checkpoint = [] { throw Crash(); };
  {
    auto p = Start(crashing);
    EXPECT_THROW(p->Prepare({Ref("a")}), Crash);
  }
  // The claim vanished from the API server meanwhile: answering from the
  // checkpoint must not need it.
  api_.claims.clear();
  auto restarted = Start();
  auto got = restarted->Prepare({Ref("a")});
  ASSERT_TRUE(got["uid-a"].status.ok()) << got["uid-a"].status;
  EXPECT_EQ(got["uid-a"].devices.size(), 2u);
  EXPECT_EQ(api_.gets["ns/a"], 1);
}

// A crash after the claim's spec was written and before the checkpoint:
// the spec is an orphan that the next start removes; the kubelet's retry
// prepares the claim afresh.
TEST_F(ClaimPreparerTest, CrashBeforeCheckpointLeavesNoClaimBehind) {
  api_.Add(Ref("a"), {"gpu-0"});
  std::filesystem::create_directories(dir_ + "/cdi");
  ASSERT_TRUE(
      common::WriteFileAtomic(ClaimSpecPath(dir_ + "/cdi", "uid-orphan"), "{}")
          .ok());
  auto p = Start();
  EXPECT_TRUE(SpecFiles().empty());
  EXPECT_TRUE(p->Prepare({Ref("a")})["uid-a"].status.ok());
}

TEST_F(ClaimPreparerTest, CorruptCheckpointIsAnErrorNotAnEmptyState) {
  ASSERT_TRUE(common::WriteFileAtomic(dir_ + "/checkpoint.json", "{").ok());
  absl::StatusOr<std::unique_ptr<ClaimPreparer>> p =
      ClaimPreparer::Create(Options(), api_.Getter());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(ClaimPreparerTest, WithoutDiscoveryNewClaimsAreUnavailable) {
  api_.Add(Ref("a"), {"gpu-0"});
  absl::StatusOr<std::unique_ptr<ClaimPreparer>> p =
      ClaimPreparer::Create(Options(), api_.Getter());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->Prepare({Ref("a")})["uid-a"].status.code(),
            absl::StatusCode::kUnavailable);
}

// Property: any sequence of prepares, unprepares and restarts leaves the
// prepared set equal to a model's (prepared minus unprepared; a claim whose
// device another prepared claim holds is refused), one spec file per
// prepared claim, and each claim read from the API server once per time it
// went from unprepared to prepared. Six claims on three devices: the
// scheduler's double bookings.
TEST_F(ClaimPreparerTest, RandomSequencesMatchTheModel) {
  const std::vector<std::string> devices = {"gpu-0", "gpu-1-mig-19-6-1",
                                            "gpu-1-mig-9-0-4"};
  std::map<std::string, std::string> device_of;
  for (int i = 0; i < 6; ++i) {
    api_.Add(Ref(absl::StrCat("c", i)), {devices[i % devices.size()]});
    device_of[absl::StrCat("uid-c", i)] = devices[i % devices.size()];
  }
  std::mt19937 rng(4680);
  auto p = Start();
  std::set<std::string> model;
  std::map<std::string, int> want_gets;
  int refused = 0;
  auto held_by_other = [&](const std::string& uid) {
    return std::any_of(model.begin(), model.end(), [&](const std::string& m) {
      return m != uid && device_of[m] == device_of[uid];
    });
  };
  for (int step = 0; step < 150; ++step) {
    int op = static_cast<int>(rng() % 5);
    if (op == 4) {
      p.reset();
      p = Start();
      continue;
    }
    std::vector<ClaimRef> batch;
    for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n) {
      batch.push_back(Ref(absl::StrCat("c", rng() % 6)));
    }
    if (op < 2) {
      auto got = p->Prepare(batch);
      std::set<std::string> seen;
      for (const ClaimRef& ref : batch) {
        if (!seen.insert(ref.uid).second) continue;
        if (!model.contains(ref.uid) && held_by_other(ref.uid)) {
          ++want_gets[ClaimName(ref)];  // read, then refused
          ++refused;
          ASSERT_EQ(got[ref.uid].status.code(),
                    absl::StatusCode::kFailedPrecondition)
              << got[ref.uid].status;
          continue;
        }
        ASSERT_TRUE(got[ref.uid].status.ok()) << got[ref.uid].status;
        ASSERT_EQ(got[ref.uid].devices.size(), 1u);
        if (model.insert(ref.uid).second) ++want_gets[ClaimName(ref)];
      }
    } else {
      auto got = p->Unprepare(batch);
      for (const ClaimRef& ref : batch) {
        ASSERT_TRUE(got[ref.uid].ok());
        model.erase(ref.uid);
      }
    }
    std::set<std::string> prepared;
    for (const auto& [uid, claim] : p->Prepared()) prepared.insert(uid);
    ASSERT_EQ(prepared, model) << "step " << step;
    ASSERT_EQ(SpecFiles().size(), model.size()) << "step " << step;
  }
  for (const auto& [name, n] : want_gets) EXPECT_EQ(api_.gets[name], n) << name;
  EXPECT_GT(refused, 0) << "the sequence never tried a double booking";
}

// The scheduler allocated gpu-0 to a and then to b (an answer to its
// allocation write lost while the API server restarted): b is refused,
// naming a, until a is unprepared; then b is prepared. A device allocated
// with adminAccess is in nobody's way, and two shares of one device live
// side by side.
TEST_F(ClaimPreparerTest, ADeviceIsPreparedForOneClaimAtATime) {
  api_.Add(Ref("a"), {"gpu-0"});
  api_.Add(Ref("b"), {"gpu-0"});
  api_.Add(Ref("watch"), {"gpu-0"});
  api_.claims["ns/watch"]["status"]["allocation"]["devices"]["results"][0]
             ["adminAccess"] = true;
  api_.AddShare(Ref("s1"), "gpu-2", "0b0e7f6c-0000-4000-8000-000000000001",
                "4Gi");
  api_.AddShare(Ref("s2"), "gpu-2", "0b0e7f6c-0000-4000-8000-000000000002",
                "4Gi");
  api_.Add(Ref("whole2"), {"gpu-2"});
  auto p = Start();
  auto got = p->Prepare({Ref("a"), Ref("watch"), Ref("s1"), Ref("s2")});
  for (const auto& [uid, r] : got)
    ASSERT_TRUE(r.status.ok()) << uid << r.status;
  got = p->Prepare({Ref("b"), Ref("whole2")});
  EXPECT_EQ(got["uid-b"].status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(got["uid-b"].status.message(),
              HasSubstr("claim ns/b: device gpu-0 of pool node-a is prepared "
                        "for claim ns/a (uid uid-a)"));
  EXPECT_EQ(got["uid-whole2"].status.code(),
            absl::StatusCode::kFailedPrecondition)
      << "a whole device beside its shares";
  EXPECT_FALSE(p->Prepared().contains("uid-b"));
  EXPECT_FALSE(std::filesystem::exists(ClaimSpecPath(dir_ + "/cdi", "uid-b")));

  // Refused across a restart too: the checkpoint says who holds gpu-0.
  p.reset();
  p = Start();
  EXPECT_EQ(p->Prepare({Ref("b")})["uid-b"].status.code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(p->Unprepare({Ref("a")})["uid-a"].ok());
  got = p->Prepare({Ref("b")});
  ASSERT_TRUE(got["uid-b"].status.ok()) << got["uid-b"].status;
  EXPECT_EQ(got["uid-b"].devices[0].device, "gpu-0");
}

}  // namespace
}  // namespace gpulet::dra
