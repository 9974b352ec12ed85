// Binder end to end on the simulator's rendered sysfs tree, with the fake
// kernel moving the driver links as the writes land.
#include "src/gpu/vfio/binder.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/fake_kernel.h"
#include "src/gpu/testing/test_tree.h"

namespace gpulet::vfio {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class BinderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tree_.Render("vfio-groups");
    absl::StatusOr<std::unique_ptr<sim::FakeKernel>> kernel =
        sim::FakeKernel::Start({tree_.root() + "/sys", tree_.root() + "/dev",
                                sim::DevNodes::kFiles});
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    kernel_ = *std::move(kernel);
    options_.state_dir = tree_.root() + "/state";
  }

  Gpu Discovered(const std::string& address) {
    absl::StatusOr<Inventory> inv = Discover(tree_.roots());
    EXPECT_TRUE(inv.ok()) << inv.status();
    for (const Gpu& gpu : inv->gpus) {
      if (gpu.function.address == address) return gpu;
    }
    ADD_FAILURE() << "no GPU " << address;
    return {};
  }
  std::string Driver(const std::string& bdf) {
    std::error_code ec;
    return fs::read_symlink(tree_.Pci(bdf) + "/driver", ec).filename().string();
  }
  absl::Status Bind(const std::string& address) {
    Binder binder(tree_.roots(), options_, out_);
    return binder.Bind(Discovered(address));
  }
  absl::Status Unbind(const std::string& address) {
    Binder binder(tree_.roots(), options_, out_);
    return binder.Unbind(Discovered(address));
  }

  testing::TestTree tree_;
  std::unique_ptr<sim::FakeKernel> kernel_;
  Binder::Options options_;
  std::ostringstream out_;
};

TEST_F(BinderTest, BindMovesTheCompanionAndTheGroupBecomesViable) {
  EXPECT_FALSE(CheckViability(Discovered("0000:17:00.0")).viable);
  ASSERT_TRUE(Bind("0000:17:00.0").ok()) << out_.str();
  EXPECT_EQ(Driver("0000:17:00.1"), "vfio-pci");
  EXPECT_TRUE(fs::exists(tree_.root() + "/dev/vfio/20"));
  EXPECT_TRUE(CheckViability(Discovered("0000:17:00.0")).viable);
  std::ifstream state(tree_.root() + "/state/0000:17:00.1");
  std::string remembered;
  state >> remembered;
  EXPECT_EQ(remembered, "snd_hda_intel");
  EXPECT_THAT(out_.str(), HasSubstr("GPU 0000:17:00.0: IOMMU group 20 bound to "
                                    "vfio-pci"));

  // Again: nothing to do.
  ASSERT_TRUE(Bind("0000:17:00.0").ok());
  EXPECT_THAT(out_.str(), HasSubstr("is on vfio-pci already; nothing to do"));

  // Back: the companion to its remembered driver, the GPU (bound before
  // gpulet, nothing remembered) to whatever the kernel probes: nvidia.
  ASSERT_TRUE(Unbind("0000:17:00.0").ok()) << out_.str();
  EXPECT_EQ(Driver("0000:17:00.1"), "snd_hda_intel");
  EXPECT_EQ(Driver("0000:17:00.0"), "nvidia");
  EXPECT_FALSE(fs::exists(tree_.root() + "/dev/vfio/20"));
  EXPECT_FALSE(fs::exists(tree_.root() + "/state/0000:17:00.1"));
  EXPECT_TRUE(kernel_->Errors().empty());
}

TEST_F(BinderTest, SharedGroupMovesBothGpusAndLeavesTheBridge) {
  ASSERT_TRUE(Bind("0000:32:00.0").ok()) << out_.str();
  for (const char* bdf :
       {"0000:32:00.0", "0000:32:00.1", "0000:33:00.0", "0000:33:00.1"}) {
    EXPECT_EQ(Driver(bdf), "vfio-pci") << bdf;
  }
  EXPECT_EQ(Driver("0000:31:00.0"), "pcieport");
  EXPECT_TRUE(fs::exists(tree_.root() + "/dev/vfio/30"));
  EXPECT_THAT(out_.str(), HasSubstr("also binds GPU 0000:33:00.0: it shares "
                                    "IOMMU group 30"));
  ASSERT_TRUE(Unbind("0000:33:00.0").ok()) << out_.str();
  EXPECT_EQ(Driver("0000:32:00.0"), "nvidia");
  EXPECT_EQ(Driver("0000:33:00.1"), "snd_hda_intel");
}

TEST_F(BinderTest, RefusesTheGroupWithTheNvmeAndChangesNothing) {
  absl::Status s = Bind("0000:ca:00.0");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("refusing to bind IOMMU group 40: it also holds "
                        "0000:cb:00.0 (144d:a80a, class 0x010802), which the "
                        "host uses through nvme"));
  EXPECT_EQ(Driver("0000:ca:00.0"), "nvidia");
  EXPECT_FALSE(fs::exists(tree_.root() + "/state"));
}

TEST_F(BinderTest, DryRunPrintsEveryWriteAndChangesNothing) {
  options_.dry_run = true;
  ASSERT_TRUE(Bind("0000:ca:00.0").ok() == false);
  ASSERT_TRUE(Bind("0000:17:00.0").ok());
  const std::string sys = tree_.root() + "/sys";
  EXPECT_EQ(out_.str(), "echo vfio-pci > " + sys +
                            "/bus/pci/devices/0000:17:00.1/driver_override\n"
                            "echo 0000:17:00.1 > " +
                            sys +
                            "/bus/pci/drivers/snd_hda_intel/unbind\n"
                            "echo 0000:17:00.1 > " +
                            sys + "/bus/pci/drivers_probe\n");
  EXPECT_EQ(Driver("0000:17:00.1"), "snd_hda_intel");
  std::ifstream override_file(tree_.Pci("0000:17:00.1") + "/driver_override");
  std::string value;
  override_file >> value;
  EXPECT_EQ(value, "(null)");
  EXPECT_FALSE(fs::exists(tree_.root() + "/state"));
}

TEST_F(BinderTest, MissingSysfsFileNamesTheGpuAndThePath) {
  const std::string unbind =
      tree_.root() + "/sys/bus/pci/drivers/snd_hda_intel/unbind";
  fs::remove(unbind);
  absl::Status s = Bind("0000:17:00.0");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr("GPU 0000:17:00.0: write 0000:17:00.1 to open " + unbind));
}

}  // namespace
}  // namespace gpulet::vfio
