#include "src/cli/cdi_command.h"

#include <stdlib.h>

#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/gpu/testing/test_tree.h"
#include "src/model/cdi/spec_codec.h"
#include "src/model/cdi/spec_file.h"
#include "src/model/testing/test_hooks.h"
#include "src/model/testing/test_root.h"

namespace gpulet::cli {
namespace {

using ::testing::HasSubstr;

const char kSimLib[] = GPULET_SIM_LIB_DIR "/libnvidia-ml.so.1";

bool Parse(std::vector<std::string> args, CdiOptions& options) {
  CLI::App app("test");
  AddCdiCommand(app, options);
  std::vector<const char*> argv = {"gpulet"};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return false;
  }
  return true;
}

TEST(CdiCommandTest, ParsesGenerateOptions) {
  CdiOptions options;
  ASSERT_TRUE(Parse({"cdi", "generate", "--format", "json", "--output", "/o",
                     "--vendor", "example.com", "--class", "accel",
                     "--dev-root", "/d", "--skip-unresolved-mig"},
                    options));
  EXPECT_EQ(options.format, "json");
  EXPECT_EQ(options.output, "/o");
  EXPECT_EQ(options.vendor, "example.com");
  EXPECT_EQ(options.cls, "accel");
  EXPECT_EQ(options.dev_root, "/d");
  EXPECT_TRUE(options.skip_unresolved_mig);
  CdiOptions bad;
  EXPECT_FALSE(Parse({"cdi", "generate", "--format", "toml"}, bad));
  EXPECT_FALSE(Parse({"cdi"}, bad));
}

GlobalOptions SimOn(const char* profile, const std::string& driver_root) {
  ::setenv("GPULET_SIM_MACHINE", profile, 1);
  GlobalOptions global;
  global.nvml_lib = kSimLib;
  global.driver_root = driver_root;
  return global;
}

// The device node paths of the spec's device `name` (none if it has no
// such device).
std::vector<std::string> NodePaths(const cdi::Spec& spec,
                                   const std::string& name) {
  std::vector<std::string> paths;
  for (const cdi::Device& d : spec.devices) {
    if (d.name != name) continue;
    for (const cdi::DeviceNode& n : d.edits.device_nodes) {
      paths.push_back(n.path);
    }
  }
  return paths;
}

// dgx-h100's minors are not its indexes (sim/profiles/dgx-h100.yaml): GPU
// 0 is /dev/nvidia2, GPU 5 /dev/nvidia8, and no GPU has minor 7.
TEST(CdiCommandTest, GeneratesASpecForTheSimulatedNode) {
  cdi::testing::TempRoot root;
  GlobalOptions global = SimOn("dgx-h100", root.path());
  std::ostringstream out;
  ASSERT_TRUE(RunCdi(global, CdiOptions{}, out).ok());
  absl::StatusOr<cdi::Spec> spec = cdi::ParseSpec(out.str());
  ASSERT_TRUE(spec.ok()) << spec.status() << out.str();
  EXPECT_EQ(spec->kind, "nvidia.com/gpu");
  EXPECT_EQ(spec->devices.size(), 8u * 2 + 1);
  EXPECT_EQ(spec->devices.back().name, "all");
  using ::testing::ElementsAre;
  EXPECT_THAT(NodePaths(*spec, "0"), ElementsAre("/dev/nvidia2"));
  EXPECT_THAT(NodePaths(*spec, "GPU-9605369a-4cef-521f-904b-cafb54df34d0"),
              ElementsAre("/dev/nvidia2"));
  EXPECT_THAT(NodePaths(*spec, "2"), ElementsAre("/dev/nvidia0"));
  EXPECT_THAT(NodePaths(*spec, "5"), ElementsAre("/dev/nvidia8"));
  EXPECT_THAT(NodePaths(*spec, "GPU-5e3a5380-1a96-5e70-ab29-387692334a60"),
              ElementsAre("/dev/nvidia8"));
  EXPECT_THAT(NodePaths(*spec, "7"), ElementsAre("/dev/nvidia5"));
  EXPECT_THAT(NodePaths(*spec, "all"),
              ::testing::Not(::testing::Contains("/dev/nvidia7")));
}

TEST(CdiCommandTest, WritesTheOutputFile) {
  cdi::testing::TempRoot root;
  GlobalOptions global = SimOn("pcie-t4", root.path());
  // The simulator's driver version: the spec mounts it and gets the
  // ld-cache hook.
  root.Write("/usr/lib64/libcuda.so.535.161.08", "");
  CdiOptions options;
  options.format = "json";
  options.output = root.Under("/spec.json");
  std::ostringstream out;
  ASSERT_TRUE(RunCdi(global, options, out).ok());
  EXPECT_TRUE(out.str().empty());
  absl::StatusOr<cdi::Spec> spec = cdi::ReadSpecFile(options.output);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->devices.size(), 4u * 2 + 1);
  ASSERT_EQ(spec->edits.hooks.size(), 1u);
  cdi::testing::ExpectEveryHookConfined(*spec);
}

// mixed-vfio: NVML sees GPUs 0-3; 4-7 are on vfio-pci, in sysfs only.
TEST(CdiCommandTest, PassthroughOutputHasTheVfioGpus) {
  vfio::testing::TestTree tree;
  tree.Render("mixed-vfio");
  cdi::testing::TempRoot root;
  GlobalOptions global = SimOn("mixed-vfio", root.path());
  global.sysfs_root = tree.root() + "/sys";
  CdiOptions options;
  options.passthrough_output = tree.root() + "/pgpu.yaml";
  options.vfio_dev_root = tree.root() + "/dev";
  std::ostringstream out;
  absl::Status s = RunCdi(global, options, out);
  ASSERT_TRUE(s.ok()) << s;
  absl::StatusOr<cdi::Spec> gpus = cdi::ParseSpec(out.str());
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_EQ(gpus->devices.size(), 4u * 2 + 1);
  absl::StatusOr<cdi::Spec> pgpu =
      cdi::ReadSpecFile(options.passthrough_output);
  ASSERT_TRUE(pgpu.ok()) << pgpu.status();
  EXPECT_EQ(pgpu->kind, "nvidia.com/pgpu");
  cdi::testing::ExpectEveryHookConfined(*pgpu);
  ASSERT_EQ(pgpu->devices.size(), 4u);
  EXPECT_EQ(pgpu->devices[0].name, "0000:9d:00.0");
  ASSERT_EQ(pgpu->devices[0].edits.device_nodes.size(), 1u);
  EXPECT_EQ(pgpu->devices[0].edits.device_nodes[0].path, "/dev/vfio/50");
  EXPECT_EQ(pgpu->devices[0].edits.device_nodes[0].host_path,
            tree.root() + "/dev/vfio/50");
}

TEST(CdiCommandTest, MigNeedsItsCapabilityMinors) {
  cdi::testing::TempRoot root;
  GlobalOptions global = SimOn("a100-mig", root.path());
  std::ostringstream out;
  absl::Status status = RunCdi(global, CdiOptions{}, out);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("mig-minors"));
  CdiOptions skip;
  skip.skip_unresolved_mig = true;
  ASSERT_TRUE(RunCdi(global, skip, out).ok());
}

// a100-mig rendered as a node: a MIG device gets its parent's
// /dev/nvidia<minor> and the capabilities mig-minors lists for
// gpu<minor> (GPU 0 has minor 2, GPU 1 minor 0, GPU 3 minor 1).
TEST(CdiCommandTest, MigDevicesUseTheParentsMinor) {
  vfio::testing::TestTree tree;
  tree.Render("a100-mig");
  GlobalOptions global = SimOn("a100-mig", tree.root());
  std::ostringstream out;
  absl::Status s = RunCdi(global, CdiOptions{}, out);
  ASSERT_TRUE(s.ok()) << s;
  absl::StatusOr<cdi::Spec> spec = cdi::ParseSpec(out.str());
  ASSERT_TRUE(spec.ok()) << spec.status();
  using ::testing::ElementsAre;
  // GPU 0's 3g.20gb: GI 1, CI 0 of gpu2.
  EXPECT_THAT(NodePaths(*spec, "MIG-ec8cb5f9-6cc3-5bb2-bdeb-b84397098347"),
              ElementsAre("/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap282",
                          "/dev/nvidia-caps/nvidia-cap283"));
  // GPU 1's first 1g.5gb: GI 7, CI 0 of gpu0.
  EXPECT_THAT(NodePaths(*spec, "MIG-55336152-84fd-5ff7-9c52-394a8d8450e5"),
              ElementsAre("/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap66",
                          "/dev/nvidia-caps/nvidia-cap67"));
  EXPECT_THAT(NodePaths(*spec, "3"), ElementsAre("/dev/nvidia1"));
  EXPECT_THAT(NodePaths(*spec, "GPU-7686041d-dbe9-5c49-b4fb-b61b57525544"),
              ElementsAre("/dev/nvidia1"));
}

TEST(CdiCommandTest, NodeWithoutGpusIsAnError) {
  cdi::testing::TempRoot root;
  GlobalOptions global = SimOn("none", root.path());
  std::ostringstream out;
  absl::Status status = RunCdi(global, CdiOptions{}, out);
  EXPECT_THAT(std::string(status.message()), HasSubstr("no GPU"));
}

TEST(CdiCommandTest, MissingDriverRootIsNamed) {
  GlobalOptions global = SimOn("dgx-h100", "/nonexistent-gpulet-root");
  std::ostringstream out;
  absl::Status status = RunCdi(global, CdiOptions{}, out);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("driver root /nonexistent-gpulet-root"));
}

}  // namespace
}  // namespace gpulet::cli
