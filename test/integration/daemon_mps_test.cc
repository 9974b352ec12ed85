// Memory shares with MPS end to end: `gpulet plugin` on the simulator's
// T4s with sharing.memory.mps, the simulated driver root's
// nvidia-cuda-mps-control (which records what it is told), and a fake
// kubelet. One control daemon per GPU with that GPU's environment, the
// limit in the Allocate answer, a dead daemon's GPU Unhealthy until its
// daemon is back, `quit` on stop and no daemon left behind.
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "sim/node_render.h"
#include "test/integration/daemon_fake_kubelet.h"
#include "test/integration/daemon_process.h"
#include "test/integration/gpulet_runner.h"
#include "test/integration/mps_daemon_fixture.h"

namespace gpulet::testing {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(60);
constexpr char kMemorySocket[] = "gpulet-gpu-memory.sock";
// pcie-t4's first two GPUs; 7 units of 2 GiB each.
constexpr char kGpu0[] = "GPU-5fdf10a6-0287-5e63-be17-239c7682b518";
constexpr char kGpu1[] = "GPU-ac5ac60b-e97f-5810-9a76-8ed7fbe42021";

std::string Unit(const std::string& gpu, int k) {
  return absl::StrCat(gpu, "::m", k);
}

class DaemonMpsTest : public MpsDaemonTest {
 protected:
  void SetUp() override {
    InstallDriver("550.54.15", /*with_smi=*/false);
    std::ofstream(config_) << "version: v1\nflags:\n  nvidiaDriverRoot: "
                           << driver_ << "\n  mpsRoot: " << mps_
                           << "\nsharing:\n  memory:\n    unit: 2GiB\n"
                              "    devices: [0, 1]\n"
                              "    mps:\n      enabled: true\n"
                              "      computeByShare: true\n";
  }

  static bool GpuHealth(const Health& h, const std::string& gpu, bool want) {
    int n = 0;
    for (const auto& [id, healthy] : h) {
      if (!absl::StartsWith(id, gpu)) continue;
      if (healthy != want) return false;
      ++n;
    }
    return n == 7;
  }
};

TEST_F(DaemonMpsTest, DaemonPerGpuLimitInAllocateHealthFollowsTheDaemon) {
  ASSERT_TRUE(kubelet_.Start());
  DaemonProcess plugin(
      "pcie-t4",
      {"--config-file", config_, "--kubelet-socket", kubelet_.socket_path()},
      log_);
  ASSERT_TRUE(kubelet_.WaitForRegistrations(2, kTimeout)) << plugin.Log();
  stub_ = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix://" + dir_ + "/" + kMemorySocket,
                          grpc::InsecureChannelCredentials()));
  context_.set_deadline(absl::ToChronoTime(absl::Now() + 3 * kTimeout));
  stream_ = stub_->ListAndWatch(&context_, v1beta1::Empty());

  // Healthy once each GPU's daemon is up, each with its own environment.
  ASSERT_TRUE(WaitForHealth([](const Health& h) {
    return GpuHealth(h, kGpu0, true) && GpuHealth(h, kGpu1, true);
  })) << Describe()
      << plugin.Log();
  for (const std::string gpu : {kGpu0, kGpu1}) {
    EXPECT_THAT(Log(gpu), HasSubstr(absl::StrCat(
                              " CUDA_VISIBLE_DEVICES=", gpu,
                              " CUDA_MPS_PIPE_DIRECTORY=", mps_, "/", gpu,
                              "/pipe CUDA_MPS_LOG_DIRECTORY=", mps_, "/", gpu,
                              "/log\n")));
  }

  // Allocate: the share as the pinned memory limit, the GPU's pipe
  // directory and the GPU's own /dev/shm (its daemon's, no other GPU's).
  v1beta1::AllocateRequest allocate;
  auto* units = allocate.add_container_requests();
  units->add_devices_ids(Unit(kGpu1, 1));
  units->add_devices_ids(Unit(kGpu1, 2));
  v1beta1::AllocateResponse allocated;
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kTimeout));
    ASSERT_TRUE(stub_->Allocate(&context, allocate, &allocated).ok());
  }
  const auto& answer = allocated.container_responses(0);
  EXPECT_EQ(answer.envs().at("GPULET_GPU_MEMORY_LIMIT"), "4096");
  EXPECT_EQ(answer.envs().at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=4096M");
  EXPECT_EQ(answer.envs().at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "29");
  const std::string pipe = absl::StrCat("/mps/", kGpu1, "/pipe");
  EXPECT_EQ(answer.envs().at("CUDA_MPS_PIPE_DIRECTORY"), pipe);
  ASSERT_EQ(answer.mounts_size(), 2);
  EXPECT_EQ(answer.mounts(0).container_path(), pipe);
  EXPECT_EQ(answer.mounts(0).host_path(),
            absl::StrCat(mps_, "/", kGpu1, "/pipe"));
  EXPECT_EQ(answer.mounts(1).container_path(), "/dev/shm");
  EXPECT_EQ(answer.mounts(1).host_path(),
            absl::StrCat(mps_, "/", kGpu1, "/shm"));

  // GPU 0's daemon dies and cannot start again: its units go Unhealthy,
  // GPU 1's stay Healthy; back when the daemon is.
  const pid_t first = LastPid(kGpu0);
  ASSERT_GT(first, 0);
  const std::string refuse =
      absl::StrCat(mps_, "/", kGpu0, "/log/refuse-start");
  std::ofstream(refuse) << "";
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(WaitForHealth([](const Health& h) {
    return GpuHealth(h, kGpu0, false) && GpuHealth(h, kGpu1, true);
  })) << Describe()
      << plugin.Log();
  ASSERT_TRUE(
      Eventually([&] { return absl::StrContains(Log(kGpu0), "refused -f"); }));
  EXPECT_TRUE(plugin.WaitForLog(
      absl::StrCat("GPU ", kGpu0, ": MPS control daemon down"), kTimeout));
  std::filesystem::remove(refuse);
  ASSERT_TRUE(WaitForHealth([](const Health& h) {
    return GpuHealth(h, kGpu0, true) && GpuHealth(h, kGpu1, true);
  })) << Describe()
      << plugin.Log();
  const pid_t second = LastPid(kGpu0);
  EXPECT_NE(second, first);
  const pid_t other = LastPid(kGpu1);

  // Stop: each daemon is told to quit, and none is left.
  context_.TryCancel();
  plugin.Signal(SIGTERM);
  EXPECT_EQ(plugin.WaitExit(kTimeout), 0) << plugin.Log();
  for (const std::string gpu : {kGpu0, kGpu1}) {
    EXPECT_THAT(Log(gpu), HasSubstr("command quit\n")) << gpu;
  }
  for (const pid_t pid : {second, other}) {
    EXPECT_TRUE(::kill(pid, 0) != 0 && errno == ESRCH) << pid;
  }
}

TEST_F(DaemonMpsTest, ReloadStopsTheDaemonOfAGpuThatNoLongerShares) {
  ASSERT_TRUE(kubelet_.Start());
  DaemonProcess plugin(
      "pcie-t4",
      {"--config-file", config_, "--kubelet-socket", kubelet_.socket_path()},
      log_);
  ASSERT_TRUE(kubelet_.WaitForRegistrations(2, kTimeout)) << plugin.Log();
  ASSERT_TRUE(Eventually([&] {
    const std::string log = plugin.Log();
    const std::string up = ": MPS control daemon up";
    return absl::StrContains(log, absl::StrCat("GPU ", kGpu0, up)) &&
           absl::StrContains(log, absl::StrCat("GPU ", kGpu1, up));
  })) << plugin.Log();
  const pid_t gpu1 = LastPid(kGpu1);

  std::ofstream(config_) << "version: v1\nflags:\n  nvidiaDriverRoot: "
                         << driver_ << "\n  mpsRoot: " << mps_
                         << "\nsharing:\n  memory:\n    unit: 2GiB\n"
                            "    devices: [0]\n"
                            "    mps: {enabled: true}\n";
  plugin.Signal(SIGHUP);
  ASSERT_TRUE(plugin.WaitForLog("configuration reloaded", kTimeout))
      << plugin.Log();
  ASSERT_TRUE(Eventually([&] {
    return absl::StrContains(Log(kGpu1), "command quit\n");
  })) << plugin.Log();
  EXPECT_TRUE(
      Eventually([&] { return ::kill(gpu1, 0) != 0 && errno == ESRCH; }));
  EXPECT_THAT(Log(kGpu0), ::testing::Not(HasSubstr("command quit")));

  plugin.Signal(SIGTERM);
  EXPECT_EQ(plugin.WaitExit(kTimeout), 0) << plugin.Log();
  EXPECT_THAT(Log(kGpu0), HasSubstr("command quit\n"));
}

}  // namespace
}  // namespace gpulet::testing
