// Failure paths of the gpulet binary: every one must end in a single
// "gpulet: <message>" line on stderr and a non-zero exit, never a crash.
// Also the library search (LD_LIBRARY_PATH, --driver-root) end to end.
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/gpulet_runner.h"

namespace gpulet::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// One line, prefixed, exit 1, no signal.
void ExpectCleanFailure(const ProcessResult& r) {
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_EQ(r.term_signal, 0) << Describe(r);
  EXPECT_THAT(r.err, StartsWith("gpulet: "));
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(NoDriverTest, FailsWithTheNvmlReason) {
  for (const char* command : {"devices", "topo"}) {
    ProcessResult r = RunGpulet("no-driver", {command});
    ExpectCleanFailure(r);
    EXPECT_THAT(r.err, HasSubstr("nvmlInit"));
    EXPECT_THAT(r.err, HasSubstr("NVML_ERROR_DRIVER_NOT_LOADED"));
  }
}

TEST(MachineErrorTest, UnknownProfileIsNamed) {
  ProcessResult r = RunGpulet("no-such-profile", {"devices"});
  ExpectCleanFailure(r);
  EXPECT_THAT(r.err, HasSubstr("no-such-profile"));
}

TEST(MachineErrorTest, MalformedMachineFileNamesFileAndLine) {
  TempDir dir;
  const std::string path = dir.path() + "/broken.yaml";
  std::ofstream(path) << "driver:\n"
                         "  version: \"550.54.15\"\n"
                         "gpus:\n"
                         "  - {uuid: GPU-x, busId: [oops\n";
  ProcessResult r = RunGpulet(path, {"devices"});
  ExpectCleanFailure(r);
  EXPECT_THAT(r.err, HasSubstr(path + ":"));
  EXPECT_THAT(r.err, ::testing::ContainsRegex("broken\\.yaml:[0-9]+"));
}

TEST(MachineErrorTest, MissingMachineFileIsNamed) {
  ProcessResult r = RunGpulet("/nonexistent/machine.yaml", {"devices"});
  ExpectCleanFailure(r);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/machine.yaml"));
}

TEST(LibraryErrorTest, MissingLibraryPathIsNamed) {
  ProcessResult r =
      RunProcess({GpuletBinary(), "--nvml-lib",
                  "/nonexistent/lib/libnvidia-ml.so.1", "devices"});
  ExpectCleanFailure(r);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/lib/libnvidia-ml.so.1"));
}

TEST(LibraryErrorTest, EmptyDriverRootNamesTheSearchedPaths) {
  TempDir root;
  ProcessResult r = RunGpuletSearching(
      "dgx-h100", {"--driver-root", root.path(), "devices"}, {});
  ExpectCleanFailure(r);
  EXPECT_THAT(r.err, HasSubstr(root.path() + "/usr/lib64/libnvidia-ml.so.1"));
}

TEST(LibrarySearchTest, FindsTheSimulatorThroughLdLibraryPath) {
  Environment env;
  env.set["LD_LIBRARY_PATH"] = SimLibDir();
  ProcessResult r = RunGpuletSearching("pcie-t4", {"devices", "--json"}, env);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(nlohmann::json::parse(r.out)["gpus"].size(), 4u);
}

TEST(LibrarySearchTest, FindsTheSimulatorUnderADriverRoot) {
  TempDir root;
  const std::string lib_dir = root.path() + "/usr/lib/x86_64-linux-gnu";
  std::filesystem::create_directories(lib_dir);
  std::filesystem::create_symlink(SimLibPath(), lib_dir + "/libnvidia-ml.so.1");
  Environment env;
  env.set["NVIDIA_DRIVER_ROOT"] = root.path();
  env.unset.push_back("LD_LIBRARY_PATH");
  // Hermetic() unsets NVIDIA_DRIVER_ROOT first; `set` wins.
  ProcessResult r = RunGpuletSearching("dgx-a100", {"devices", "--json"}, env);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(nlohmann::json::parse(r.out)["gpus"].size(), 8u);

  ProcessResult flag = RunGpuletSearching(
      "dgx-a100", {"--driver-root", root.path(), "topo"}, {});
  ASSERT_EQ(flag.exit_code, 0) << Describe(flag);
  EXPECT_THAT(flag.out, HasSubstr("NV12"));
}

TEST(UsageErrorTest, ExitTwo) {
  ProcessResult r = RunGpulet("dgx-h100", {"devices", "--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_THAT(r.err, StartsWith("gpulet: "));
}

TEST(UsageErrorTest, DraMemoryShareUnitIsNamed) {
  ProcessResult r =
      RunGpulet("dgx-h100", {"dra", "--node-name", "n1", "--memory-shares",
                             "--memory-share-unit", "3GB"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_THAT(r.err, StartsWith("gpulet: --memory-share-unit: \"3GB\""));
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

}  // namespace
}  // namespace gpulet::testing
