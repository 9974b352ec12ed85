// The fixture of the ClaimPreparer tests (claim_preparer_test.cc,
// claim_preparer_sharing_test.cc): a temp directory for the checkpoint and
// the claim specs, a fake API server holding the claims and a fake sharing
// applier (test_claims.h), and preparers started over the directory as a
// restarted gpulet would.
//
// Not thread-safe; one test at a time.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "src/dra/kubelet/claim_preparer.h"
#include "src/dra/testing/test_claims.h"

namespace gpulet::dra {

class ClaimPreparerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dra-prep-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  PreparerOptions Options() {
    PreparerOptions o;
    o.driver = "gpu.nvidia.com";
    o.pool = testing_claims::kPool;
    o.checkpoint_path = dir_ + "/checkpoint.json";
    o.cdi_dir = dir_ + "/cdi";
    o.sharing = &sharing_;
    return o;
  }
  // A new preparer over the same directory: what a restart of gpulet sees.
  std::unique_ptr<ClaimPreparer> Start(PreparerOptions options) {
    absl::StatusOr<std::unique_ptr<ClaimPreparer>> p =
        ClaimPreparer::Create(std::move(options), api_.Getter());
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return nullptr;
    (*p)->SetNode(testing_claims::TestNode(), testing_claims::TestSpec());
    return *std::move(p);
  }
  std::unique_ptr<ClaimPreparer> Start() { return Start(Options()); }

  std::set<std::string> SpecFiles() {
    std::set<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/cdi")) {
      out.insert(e.path().filename().string());
    }
    return out;
  }

  std::string dir_;
  testing_claims::FakeApi api_;
  testing_claims::FakeSharing sharing_;
};

}  // namespace gpulet::dra
