// `gpulet vfio bind|unbind` through the whole command line, on the
// simulator's rendered sysfs tree with its fake kernel moving the links.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/fake_kernel.h"
#include "sim/node_render.h"
#include "sim/profiles.h"
#include "src/cli/app.h"

namespace gpulet::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const char kSimLib[] = GPULET_SIM_LIB_DIR "/libnvidia-ml.so.1";

class VfioCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpulet-vfio-cli-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    ASSERT_NE(made, nullptr);
    root_ = made;
    ::setenv("GPULET_SIM_MACHINE", "vfio-groups", 1);
    absl::StatusOr<sim::Machine> machine = sim::LoadMachine("vfio-groups");
    ASSERT_TRUE(machine.ok());
    sim::RenderOptions render;
    render.root = root_;
    render.dev_nodes = sim::DevNodes::kFiles;
    ASSERT_TRUE(sim::RenderNode(*machine, render).ok());
    auto kernel = sim::FakeKernel::Start(
        {root_ + "/sys", root_ + "/dev", sim::DevNodes::kFiles});
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    kernel_ = *std::move(kernel);
  }
  void TearDown() override {
    kernel_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  struct Result {
    int code;
    std::string out;
    std::string err;
  };
  Result Gpulet(std::vector<std::string> args) {
    const std::string sys = root_ + "/sys", dev = root_ + "/dev",
                      state = root_ + "/state";
    std::vector<std::string> all = {"gpulet", "--nvml-lib", kSimLib};
    all.insert(all.end(), args.begin(), args.end());
    for (const std::string& flag :
         {std::string("--sys-root=") + sys, "--dev-root=" + dev,
          "--state-dir=" + state}) {
      all.push_back(flag);
    }
    std::vector<const char*> argv;
    for (const std::string& a : all) argv.push_back(a.c_str());
    std::ostringstream out, err;
    const int code =
        cli::Run(static_cast<int>(argv.size()), argv.data(), out, err);
    return {code, out.str(), err.str()};
  }
  std::string Driver(const std::string& bdf) {
    std::error_code ec;
    return fs::read_symlink(root_ + "/sys/bus/pci/devices/" + bdf + "/driver",
                            ec)
        .filename()
        .string();
  }

  std::string root_;
  std::unique_ptr<sim::FakeKernel> kernel_;
};

TEST_F(VfioCommandTest, BindByIndexThenUnbindByAddress) {
  Result r = Gpulet({"vfio", "bind", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("GPU 0000:17:00.0: IOMMU group 20 bound to vfio-pci"));
  EXPECT_EQ(Driver("0000:17:00.1"), "vfio-pci");
  EXPECT_TRUE(fs::exists(root_ + "/dev/vfio/20"));
  r = Gpulet({"vfio", "unbind", "17:00.0"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Driver("0000:17:00.1"), "snd_hda_intel");
  EXPECT_FALSE(fs::exists(root_ + "/dev/vfio/20"));
}

TEST_F(VfioCommandTest, BindByUuidWhileNvmlSeesTheGpu) {
  Result r = Gpulet({"vfio", "bind", "GPU-8c2d4e61-1f3a-5b70-9e42-7d5c0a6b3f18",
                     "0000:33:00.0"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Driver("0000:32:00.0"), "vfio-pci");
  EXPECT_EQ(Driver("0000:33:00.0"), "vfio-pci");
  // The second GPU moved with the first: its turn is a no-op.
  EXPECT_THAT(r.out,
              HasSubstr("GPU 0000:33:00.0: IOMMU group 30 is on vfio-pci "
                        "already; nothing to do"));
}

TEST_F(VfioCommandTest, DryRunAndRefusal) {
  Result r = Gpulet({"vfio", "bind", "--dry-run", "0000:32:00.0"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("echo 0000:32:00.1 > " + root_ +
                               "/sys/bus/pci/drivers/snd_hda_intel/unbind\n"));
  EXPECT_EQ(Driver("0000:32:00.1"), "snd_hda_intel");
  r = Gpulet({"vfio", "bind", "3"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("refusing to bind IOMMU group 40"));
  EXPECT_EQ(Driver("0000:ca:00.0"), "nvidia");
}

// The init container's form: the GPUs the daemon's own passthrough section
// selects. An entry selecting nothing on this node is reported, not fatal
// (one ConfigMap serves every node); --sys-root given wins over sysRoot.
TEST_F(VfioCommandTest, BindWhatTheConfigSelects) {
  const std::string config = root_ + "/config.yaml";
  std::ofstream(config) << "version: v1\npassthrough:\n"
                           "  devices: [vfio-pci, \"32:00.0\", \"10de:9999\"]\n"
                           "  sysRoot: /host/sys\n";
  Result r = Gpulet({"vfio", "bind", "--config", config});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(config + ": passthrough.devices[2]: selects "
                                        "nothing: 10de:9999"));
  // GPU 0 was on vfio-pci already (its audio function now is too); GPU 1's
  // shared group moved with it.
  EXPECT_EQ(Driver("0000:17:00.1"), "vfio-pci");
  EXPECT_EQ(Driver("0000:32:00.0"), "vfio-pci");
  EXPECT_EQ(Driver("0000:33:00.0"), "vfio-pci");
  EXPECT_EQ(Driver("0000:ca:00.0"), "nvidia");

  // The explicit list still works beside it, and without it.
  std::ofstream(config, std::ios::trunc) << "version: v1\n";
  r = Gpulet({"vfio", "bind", "--config", config, "0"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr(config + ": no passthrough section"));
  std::ofstream(config, std::ios::trunc)
      << "version: v1\npassthrough:\n  devices: [\"10de:9999\"]\n";
  r = Gpulet({"vfio", "bind", "--config", config});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("selects no GPU on this node; nothing to do"));
  std::ofstream(config, std::ios::trunc)
      << "version: v1\npassthrough:\n  devices: [gpu0]\n";
  r = Gpulet({"vfio", "bind", "--config", config});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("passthrough.devices[0]: \"gpu0\" is not"));
}

TEST_F(VfioCommandTest, BadArguments) {
  Result r = Gpulet({"vfio", "bind", "7"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err,
              HasSubstr("GPU \"7\": no GPU with that index (NVIDIA GPUs: "
                        "0 0000:17:00.0, 1 0000:32:00.0"));
  r = Gpulet({"vfio", "unbind", "GPU-00000000-0000-4000-8000-000000000000"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("NVML knows no GPU with that UUID"));
  r = Gpulet({"vfio", "bind"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("no GPU given"));
  r = Gpulet({"vfio", "bind", "0", "--timeout-ms", "0"});
  EXPECT_EQ(r.code, 2);
}

}  // namespace
}  // namespace gpulet::cli
