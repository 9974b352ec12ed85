// Two MPS pods of different DRA claims see different /dev/shm (issue: one
// /dev/shm for every MPS client on the node). The claims are prepared by
// gpulet dra's own ClaimPreparer with its own MPS wiring (DraSharing, whose
// control daemons are the simulated driver's nvidia-cuda-mps-control), and
// their CDI specs are applied by gpulet-runtime under real runc: a file one
// claim's container writes into /dev/shm lands in that claim's shm
// directory on the host and is absent from the other claim's container.
// Skipped unless root with runc and busybox-static installed.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/node_render.h"
#include "src/dra/kubelet/claim_preparer.h"
#include "src/dra/runner/dra_sharing.h"
#include "src/dra/testing/test_claims.h"
#include "test/integration/subprocess.h"
#include "test/runtime/runc_fixture.h"
#include "test/runtime/runc_test.h"

namespace gpulet::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace claims = dra::testing_claims;

class MpsShmRuncTest : public RuncTest<> {
 protected:
  void SetUp() override {
    RuncTest<>::SetUp();
    if (SetUpStopped()) return;
    mps_root_ = fixture_->dir() + "/mps";
    const std::string control = fixture_->dir() + "/nvidia-cuda-mps-control";
    std::ofstream(control) << sim::MpsControlScript("550.54.15");
    ASSERT_EQ(::chmod(control.c_str(), 0755), 0);
    sharing_ = std::make_unique<daemon::DraSharing>(daemon::DraSharingOptions{
        .nvidia_smi = "", .mps_control = control, .mps_root = mps_root_});
  }
  void TearDown() override {
    preparer_.reset();
    sharing_.reset();  // stops the claims' daemons
  }

  // The claims' node spec: the fixture's, with its GPU 0 under the UUID
  // the test node gives GPU 0.
  cdi::Spec NodeSpec() const {
    cdi::Spec spec = fixture_->spec();
    for (const cdi::Device& d : fixture_->spec().devices) {
      if (d.name == "GPU-fake-0") {
        spec.devices.push_back(d);
        spec.devices.back().name = "GPU-0000";
      }
    }
    return spec;
  }

  void PrepareMpsClaims(const std::vector<std::string>& names) {
    dra::PreparerOptions o;
    o.driver = "gpu.nvidia.com";
    o.pool = claims::kPool;
    o.checkpoint_path = fixture_->dir() + "/checkpoint.json";
    o.cdi_dir = fixture_->spec_dir();
    o.sharing = sharing_.get();
    // Each claim a share of gpu-0 (a GPU published for several
    // allocations): two whole-device claims of one GPU are never prepared
    // together.
    for (const std::string& name : names) {
      api_.AddShare(claims::Ref(name), "gpu-0", ShareId(name), "4Gi");
      api_.claims["ns/" + name]["status"]["allocation"]["devices"]["config"] =
          claims::SharingConfig({{"strategy", "MPS"}});
    }
    auto p = dra::ClaimPreparer::Create(o, api_.Getter());
    ASSERT_TRUE(p.ok()) << p.status();
    preparer_ = *std::move(p);
    preparer_->SetNode(claims::TestNode(), NodeSpec());
    std::vector<dra::ClaimRef> refs;
    for (const std::string& name : names) refs.push_back(claims::Ref(name));
    for (auto& [uid, result] : preparer_->Prepare(refs)) {
      ASSERT_TRUE(result.status.ok()) << uid << ": " << result.status;
    }
  }

  // Runs `script` in a container that asks for the claim's device by CDI
  // annotation, as the kubelet passes a DRA claim's devices; its output.
  std::string RunInClaim(const std::string& name, const std::string& script) {
    const std::string id = absl::StrCat(fixture_->dir().substr(5), "-", name);
    absl::StatusOr<std::string> bundle =
        fixture_->MakeBundle(id, {"sh", "-c", script}, {});
    EXPECT_TRUE(bundle.ok()) << bundle.status();
    if (!bundle.ok()) return "";
    nlohmann::json config = *fixture_->ReadConfig(*bundle);
    config["annotations"]["cdi.k8s.io/gpulet-dra_" + name] = absl::StrCat(
        "k8s.gpu.nvidia.com/claim=uid-", name, "-gpu-0-", ShareId(name));
    EXPECT_TRUE(fixture_->WriteConfig(*bundle, config).ok());
    fixture_->Track(id);
    ProcessResult r = RunProcess(
        {GPULET_RUNTIME_BINARY, "--root", fixture_->state_root(), "run",
         "--bundle", *bundle, id},
        {{{"GPULET_RUNTIME_CONFIG", fixture_->runtime_config()}}, {}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  // The share ID of `name`'s share: its last letter in the last digits.
  static std::string ShareId(const std::string& name) {
    return absl::StrCat("0b0e7f6c-0000-4000-8000-0000000000",
                        absl::Hex(name.back(), absl::kZeroPad2));
  }

  std::string mps_root_;
  claims::FakeApi api_;
  std::unique_ptr<daemon::DraSharing> sharing_;
  std::unique_ptr<dra::ClaimPreparer> preparer_;
};

TEST_F(MpsShmRuncTest, TwoMpsClaimsSeeDifferentDevShm) {
  PrepareMpsClaims({"tenant-a", "tenant-b"});
  const std::string a_out = RunInClaim(
      "tenant-a",
      "echo secret > /dev/shm/from-a && echo $CUDA_MPS_PIPE_DIRECTORY");
  // The claim's MPS edits were applied: its pipe directory is named.
  EXPECT_THAT(a_out, HasSubstr("/mps/claim-uid-tenant-a/pipe"));
  EXPECT_TRUE(
      std::filesystem::exists(mps_root_ + "/claim-uid-tenant-a/shm/from-a"));
  const std::string b_out =
      RunInClaim("tenant-b", "ls -a /dev/shm; cat /dev/shm/from-a; true");
  EXPECT_THAT(b_out, Not(HasSubstr("from-a")));
  EXPECT_THAT(b_out, Not(HasSubstr("secret")));

  // Unprepare removes the claim's directory, shm included.
  auto gone = preparer_->Unprepare({claims::Ref("tenant-a")});
  EXPECT_TRUE(gone["uid-tenant-a"].ok()) << gone["uid-tenant-a"];
  EXPECT_FALSE(std::filesystem::exists(mps_root_ + "/claim-uid-tenant-a"));
  EXPECT_TRUE(
      std::filesystem::is_directory(mps_root_ + "/claim-uid-tenant-b/shm"));
}

}  // namespace
}  // namespace gpulet::testing
