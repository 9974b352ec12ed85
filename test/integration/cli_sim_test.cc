// `gpulet sim` round trip: a separate process (sim_host) holds the NVML
// simulator initialised with GPULET_SIM_SOCKET set; gpulet sends it fault
// commands over that socket and prints the replies.
#include <filesystem>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/gpulet_runner.h"

namespace gpulet::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using json = nlohmann::json;

class SimRoundTripTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    socket_ = dir_.path() + "/sim.sock";
    Environment env;
    env.set["GPULET_SIM_SOCKET"] = socket_;
    env.set["GPULET_SIM_MACHINE"] = "dgx-h100";
    host_ = ChildProcess::Start({SimHostBinary(), SimLibPath()}, env);
    ASSERT_TRUE(host_.has_value());
    // "ready" is printed after nvmlInit returned, i.e. once the control
    // socket listens: no polling needed.
    ASSERT_EQ(host_->ReadLine(), "ready");
  }
  void TearDown() override {
    if (host_) {
      EXPECT_EQ(host_->Finish(), 0);
    }
  }

  ProcessResult Sim(std::vector<std::string> args) {
    args.insert(args.begin(), {"sim", "--socket", socket_});
    return RunGpulet("dgx-h100", args);
  }

  json Status() {
    ProcessResult r = Sim({"status"});
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
  }

  TempDir dir_;
  std::string socket_;
  std::optional<ChildProcess> host_;
};

TEST_F(SimRoundTripTest, StatusDescribesTheRunningSimulator) {
  json status = Status();
  EXPECT_EQ(status["initialized"], true);
  ASSERT_EQ(status["gpus"].size(), 8u);
  EXPECT_EQ(status["gpus"][0]["lost"], false);
  EXPECT_EQ(status["events"]["injected"], 0);
}

TEST_F(SimRoundTripTest, XidDbeSbeAreInjected) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"xid", "--gpu", "0", "--xid", "79"},
           {"xid", "--gpu", "3", "--xid", "31", "--gi", "1", "--ci", "0"},
           {"dbe", "--gpu", "1"},
           {"sbe", "--gpu", "GPU-9605369a-4cef-521f-904b-cafb54df34d0"}}) {
    ProcessResult r = Sim(args);
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.err, "");
  }
  EXPECT_EQ(Status()["events"]["injected"], 4);
}

TEST_F(SimRoundTripTest, LoseAndRestore) {
  ASSERT_EQ(Sim({"lose", "--gpu", "1"}).exit_code, 0);
  EXPECT_EQ(Status()["gpus"][1]["lost"], true);
  ASSERT_EQ(Sim({"restore", "--gpu", "1"}).exit_code, 0);
  EXPECT_EQ(Status()["gpus"][1]["lost"], false);
}

TEST_F(SimRoundTripTest, WaitError) {
  ProcessResult r = Sim({"wait-error", "--code", "15", "--count", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  json status = Status();
  EXPECT_EQ(status["wait_error"]["code"], 15);
  EXPECT_EQ(status["wait_error"]["remaining"], 2);
}

TEST_F(SimRoundTripTest, SocketFromTheEnvironment) {
  Environment env;
  env.set["GPULET_SIM_SOCKET"] = socket_;
  ProcessResult r = RunGpulet("dgx-h100", {"sim", "status"}, env);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(json::parse(r.out)["gpus"].size(), 8u);
}

TEST_F(SimRoundTripTest, SimulatorErrorsAreReported) {
  ProcessResult r = Sim({"xid", "--gpu", "99", "--xid", "79"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_THAT(r.err, StartsWith("gpulet: "));
  EXPECT_THAT(r.err, HasSubstr("99"));
}

TEST(SimUsageTest, NoSocketIsAUsageError) {
  ProcessResult r = RunGpulet("dgx-h100", {"sim", "status"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_THAT(r.err, StartsWith("gpulet: "));
  EXPECT_THAT(r.err, HasSubstr("GPULET_SIM_SOCKET"));
}

TEST(SimUsageTest, NothingListeningIsARuntimeError) {
  TempDir dir;
  ProcessResult r = RunGpulet(
      "dgx-h100", {"sim", "--socket", dir.path() + "/none.sock", "status"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr(dir.path() + "/none.sock"));
}

// `gpulet sim render` needs no simulator socket and takes the machine from
// GPULET_SIM_MACHINE, as the simulator does.
TEST(SimRenderTest, RendersTheMachineOfTheEnvironment) {
  TempDir dir;
  const std::string root = dir.path() + "/node";
  ProcessResult r =
      RunGpulet("a100-mig", {"sim", "render", root, "--dev-nodes", "files"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("profile:a100-mig (4 GPUs, driver 550.54.15)"));
  EXPECT_TRUE(std::filesystem::exists(
      root + "/driver/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"));
  EXPECT_TRUE(std::filesystem::exists(
      root + "/proc/driver/nvidia/gpus/0000:c1:00.0/information"));

  r = RunGpulet("no-driver", {"sim", "render", root, "--dev-nodes", "files"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("no driver"));
  r = RunGpulet("a100-mig", {"sim", "render", "relative"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("absolute"));
}

// `gpulet sim kernel` as its own process plays the kernel while `gpulet
// vfio bind` writes to the tree: the binding moves, the group node appears.
TEST(SimKernelTest, VfioBindAgainstTheFakeKernelProcess) {
  TempDir dir;
  const std::string root = dir.path() + "/node";
  ProcessResult r =
      RunGpulet("vfio-groups", {"sim", "render", root, "--dev-nodes", "files"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::optional<ChildProcess> kernel = ChildProcess::Start(
      {GpuletBinary(), "sim", "kernel", root, "--dev-nodes", "files"}, {});
  ASSERT_TRUE(kernel.has_value());
  std::optional<std::string> ready = kernel->ReadLine();
  ASSERT_TRUE(ready.has_value());
  EXPECT_THAT(*ready, HasSubstr("fake kernel watching " + root + "/sys"));
  r = RunGpulet("vfio-groups",
                {"vfio", "bind", "0000:17:00.0", "--sys-root", root + "/sys",
                 "--dev-root", root + "/dev", "--state-dir", root + "/state"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(std::filesystem::read_symlink(
                root + "/sys/bus/pci/devices/0000:17:00.1/driver")
                .filename(),
            "vfio-pci");
  EXPECT_TRUE(std::filesystem::exists(root + "/dev/vfio/20"));
  EXPECT_EQ(kernel->Finish(), 0);

  r = RunGpulet("", {"sim", "kernel", dir.path() + "/not-rendered"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("not-rendered/sys/bus/pci/drivers"));
}

}  // namespace
}  // namespace gpulet::testing
