// The passthrough part of the rendered node (render_sys.cc, sysfs_tree.h)
// and FakeKernel's reactions to binding writes.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/fake_kernel.h"
#include "sim/node_render.h"
#include "sim/profiles.h"
#include "sim/sysfs_tree.h"

namespace gpulet::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class RenderSysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpulet-sys-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    ASSERT_NE(made, nullptr);
    root_ = made;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void Render(const std::string& profile) {
    absl::StatusOr<Machine> m = LoadMachine(profile);
    ASSERT_TRUE(m.ok()) << m.status();
    RenderOptions options;
    options.root = root_;
    options.dev_nodes = DevNodes::kFiles;
    ASSERT_TRUE(RenderNode(*m, options).ok());
  }
  std::string Driver(const std::string& bdf) {
    std::error_code ec;
    return fs::read_symlink(Pci(bdf) + "/driver", ec).filename().string();
  }
  std::string Pci(const std::string& bdf) {
    return root_ + "/sys/bus/pci/devices/" + bdf;
  }
  bool Exists(const std::string& rel) { return fs::exists(root_ + rel); }
  void Write(const std::string& rel, const std::string& text) {
    std::ofstream(root_ + rel, std::ios::trunc) << text << "\n";
  }
  // The fake kernel reacts after the write; wait for the effect, bounded
  // only so that a broken kernel fails instead of hanging.
  static bool Eventually(const std::function<bool()>& condition) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!condition()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  std::string root_;
};

TEST_F(RenderSysTest, MixedVfioBindsHalfTheGpusToVfioPci) {
  Render("mixed-vfio");
  EXPECT_EQ(Driver("0000:1b:00.0"), "nvidia");
  EXPECT_EQ(Driver("0000:9d:00.0"), "vfio-pci");
  EXPECT_TRUE(
      fs::is_symlink(root_ + "/sys/bus/pci/drivers/vfio-pci/0000:9d:00.0"));
  EXPECT_EQ(fs::read_symlink(Pci("0000:9d:00.0") + "/iommu_group").filename(),
            "50");
  EXPECT_TRUE(Exists("/dev/vfio/vfio"));
  EXPECT_TRUE(Exists("/dev/vfio/50"));
  EXPECT_TRUE(Exists("/dev/vfio/53"));
  EXPECT_FALSE(Exists("/dev/vfio/30"));
  EXPECT_FALSE(Exists("/dev/iommu"));
  EXPECT_TRUE(Exists("/sys/bus/pci/drivers/vfio-pci/bind"));
  EXPECT_TRUE(Exists("/sys/bus/pci/drivers_probe"));
}

TEST_F(RenderSysTest, GroupsWithCompanionsBridgeAndForeignDevice) {
  Render("vfio-groups");
  EXPECT_EQ(Driver("0000:17:00.0"), "vfio-pci");
  EXPECT_EQ(Driver("0000:17:00.1"), "snd_hda_intel");
  // The group's node is there for its GPU on vfio-pci, though its audio
  // function keeps the group from being viable.
  EXPECT_TRUE(Exists("/dev/vfio/20"));
  int members = 0;
  for ([[maybe_unused]] const auto& e :
       fs::directory_iterator(root_ + "/sys/kernel/iommu_groups/30/devices")) {
    ++members;
  }
  EXPECT_EQ(members, 5);
  EXPECT_EQ(Driver("0000:cb:00.0"), "nvme");
  std::ifstream in(Pci("0000:cb:00.0") + "/class");
  std::string text;
  in >> text;
  EXPECT_EQ(text, "0x010802");
}

TEST_F(RenderSysTest, IommufdHostHasCdevs) {
  Render("vfio-iommufd");
  EXPECT_TRUE(Exists("/dev/iommu"));
  EXPECT_TRUE(fs::is_directory(Pci("0000:4a:00.0") + "/vfio-dev/vfio0"));
  EXPECT_TRUE(fs::is_directory(Pci("0000:ca:00.0") + "/vfio-dev/vfio1"));
  EXPECT_TRUE(Exists("/dev/vfio/devices/vfio0"));
  EXPECT_TRUE(Exists("/dev/vfio/devices/vfio1"));
  EXPECT_TRUE(Exists("/dev/vfio/60"));
}

TEST_F(RenderSysTest, VgpuHostHasMdevTypesAndInstances) {
  Render("vgpu-host");
  const std::string type =
      Pci("0000:31:00.0") + "/mdev_supported_types/nvidia-701";
  std::ifstream name(type + "/name");
  std::string line;
  std::getline(name, line);
  EXPECT_EQ(line, "GRID A100D-40C");
  const std::string mdev =
      root_ + "/sys/bus/mdev/devices/9f1c6d2a-4b3e-4e8f-a1d7-5c0b2e9f8a63";
  EXPECT_EQ(fs::read_symlink(mdev + "/mdev_type").filename(), "nvidia-701");
  // Groups 70 and 71 are the GPUs'; mdevs are numbered after them.
  EXPECT_EQ(fs::read_symlink(mdev + "/iommu_group").filename(), "72");
  EXPECT_TRUE(Exists("/dev/vfio/72"));
  EXPECT_TRUE(Exists("/dev/vfio/73"));
  EXPECT_EQ(fs::canonical(mdev).parent_path().filename(), "0000:31:00.0");
}

// As the kernel keeps /dev/vfio/<group>: made when the group's first
// function binds to vfio-pci, kept while any one is bound, removed when the
// last one unbinds, whichever order a GPU and its audio function take.
TEST_F(RenderSysTest, GroupNodeLivesWhileAnyFunctionIsOnVfioPci) {
  const std::string gpu = "0000:17:00.0", audio = "0000:17:00.1";
  for (const bool gpu_binds_first : {true, false}) {
    for (const bool gpu_unbinds_first : {true, false}) {
      SCOPED_TRACE(
          absl::StrCat("GPU binds ", gpu_binds_first ? "first" : "last",
                       ", unbinds ", gpu_unbinds_first ? "first" : "last"));
      Render("vfio-groups");
      const SysTree tree{root_ + "/sys", root_ + "/dev", DevNodes::kFiles};
      // From the profile's GPU on vfio-pci, audio on snd_hda_intel to
      // nothing of the group on vfio-pci.
      ASSERT_TRUE(UnbindFunction(tree, gpu, "vfio-pci").ok());
      ASSERT_TRUE(UnbindFunction(tree, audio, "snd_hda_intel").ok());
      ASSERT_FALSE(Exists("/dev/vfio/20"));

      const std::string& first = gpu_binds_first ? gpu : audio;
      const std::string& second = gpu_binds_first ? audio : gpu;
      ASSERT_TRUE(BindFunction(tree, first, "vfio-pci").ok());
      EXPECT_TRUE(Exists("/dev/vfio/20")) << "after " << first << " bound";
      ASSERT_TRUE(BindFunction(tree, second, "vfio-pci").ok());
      EXPECT_TRUE(Exists("/dev/vfio/20")) << "after " << second << " bound";

      const std::string& leaves = gpu_unbinds_first ? gpu : audio;
      const std::string& stays = gpu_unbinds_first ? audio : gpu;
      ASSERT_TRUE(UnbindFunction(tree, leaves, "vfio-pci").ok());
      EXPECT_TRUE(Exists("/dev/vfio/20")) << "after " << leaves << " left";
      ASSERT_TRUE(UnbindFunction(tree, stays, "vfio-pci").ok());
      EXPECT_FALSE(Exists("/dev/vfio/20")) << "after " << stays << " left";
    }
  }
}

TEST_F(RenderSysTest, RenderingAnotherMachineReplacesTheTree) {
  Render("vfio-groups");
  Render("mixed-vfio");
  EXPECT_FALSE(fs::exists(Pci("0000:17:00.0")));
  EXPECT_FALSE(Exists("/sys/bus/pci/drivers/nvme"));
  EXPECT_FALSE(Exists("/sys/kernel/iommu_groups/20"));
  EXPECT_TRUE(Exists("/dev/vfio/50"));
}

TEST_F(RenderSysTest, FakeKernelMovesDriverLinksAndMakesTheGroupNode) {
  Render("vfio-groups");
  absl::StatusOr<std::unique_ptr<FakeKernel>> kernel =
      FakeKernel::Start({root_ + "/sys", root_ + "/dev", DevNodes::kFiles});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  // The GPU, the group's one function on vfio-pci, leaves: the node goes.
  Write("/sys/bus/pci/drivers/vfio-pci/unbind", "0000:17:00.0");
  ASSERT_TRUE(Eventually([&] { return Driver("0000:17:00.0").empty(); }));
  EXPECT_TRUE(Eventually([&] { return !Exists("/dev/vfio/20"); }));
  // Its audio function comes: the node is back.
  Write("/sys/bus/pci/drivers/snd_hda_intel/unbind", "0000:17:00.1");
  ASSERT_TRUE(Eventually([&] { return Driver("0000:17:00.1").empty(); }));
  EXPECT_FALSE(
      fs::exists(root_ + "/sys/bus/pci/drivers/snd_hda_intel/0000:17:00.1"));
  Write("/sys/bus/pci/devices/0000:17:00.1/driver_override", "vfio-pci");
  Write("/sys/bus/pci/drivers_probe", "0000:17:00.1");
  ASSERT_TRUE(Eventually([&] { return Driver("0000:17:00.1") == "vfio-pci"; }));
  EXPECT_TRUE(Eventually([&] { return Exists("/dev/vfio/20"); }));

  // Back: unbind (the group's last function on vfio-pci: the node goes),
  // clear the override, probe: the native driver returns.
  Write("/sys/bus/pci/drivers/vfio-pci/unbind", "0000:17:00.1");
  ASSERT_TRUE(Eventually([&] { return Driver("0000:17:00.1").empty(); }));
  EXPECT_FALSE(Exists("/dev/vfio/20"));
  Write("/sys/bus/pci/devices/0000:17:00.1/driver_override", "");
  Write("/sys/bus/pci/drivers_probe", "0000:17:00.1");
  ASSERT_TRUE(
      Eventually([&] { return Driver("0000:17:00.1") == "snd_hda_intel"; }));

  // What the kernel refuses changes nothing and is recorded.
  Write("/sys/bus/pci/drivers/vfio-pci/bind", "0000:cb:00.0");
  ASSERT_TRUE(Eventually([&] { return !(*kernel)->Errors().empty(); }));
  EXPECT_THAT((*kernel)->Errors()[0], HasSubstr("already bound to nvme"));
  EXPECT_EQ(Driver("0000:cb:00.0"), "nvme");
}

}  // namespace
}  // namespace gpulet::sim
