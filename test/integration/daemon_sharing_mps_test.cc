// sharing.mps end to end: `gpulet plugin` on the simulator's T4s with
// sharing.mps, the simulated driver root's nvidia-cuda-mps-control and
// nvidia-smi (which record what they are told), and a fake kubelet. One
// control daemon per replicated GPU, set to EXCLUSIVE_PROCESS and told
// NVIDIA's limits; the Allocate answer's pipe mount is that daemon's pipe
// directory; a killed daemon makes exactly its GPU's replicas Unhealthy
// until it is back; a reload to more replicas restarts the daemons with
// the new limits, and one that drops sharing.mps stops them and restores
// the compute mode.
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
constexpr char kGpuSocket[] = "gpulet-gpu.sock";
// pcie-t4's four GPUs, 15360 MiB each.
constexpr const char* kGpus[] = {"GPU-5fdf10a6-0287-5e63-be17-239c7682b518",
                                 "GPU-ac5ac60b-e97f-5810-9a76-8ed7fbe42021",
                                 "GPU-08283e8c-b997-5424-a43d-e0a45ae09f2c",
                                 "GPU-de2e8385-285c-52ab-8c5f-9b552bac2c59"};

class DaemonSharingMpsTest : public MpsDaemonTest {
 protected:
  void SetUp() override {
    InstallDriver("535.161.08", /*with_smi=*/true);
    WriteConfig(2);
  }

  void WriteConfig(int replicas) {
    std::ofstream out(config_);
    out << "version: v1\nflags:\n  nvidiaDriverRoot: " << driver_
        << "\n  mpsRoot: " << mps_ << "\n";
    if (replicas > 0) {
      out << "sharing:\n  mps:\n    resources:\n"
             "    - name: nvidia.com/gpu\n      replicas: "
          << replicas << "\n";
    }
  }

  std::string SmiLog() const {
    absl::StatusOr<std::string> text =
        common::ReadFile(driver_ + "/usr/bin/nvidia-smi.log");
    return text.ok() ? *text : "";
  }
  // Whether the log's last daemon was told these limits after it started.
  bool LimitsAfterLastStart(const std::string& gpu, const std::string& mib,
                            int percent) const {
    const std::string log = Log(gpu);
    const size_t start = log.rfind("start -f ");
    return start != std::string::npos &&
           absl::StrContains(
               log.substr(start),
               absl::StrCat("command set_default_device_pinned_mem_limit 0 ",
                            mib,
                            "M\ncommand "
                            "set_default_active_thread_percentage ",
                            percent, "\n"));
  }

  // Every replica of `gpu` (there are `replicas`) has health `want`.
  static bool GpuHealth(const Health& h, const std::string& gpu, bool want,
                        int replicas = 2) {
    for (int n = 0; n < replicas; ++n) {
      auto it = h.find(absl::StrCat(gpu, "::", n));
      if (it == h.end() || it->second != want) return false;
    }
    return true;
  }
  static bool AllHealthy(const Health& h, int replicas = 2) {
    for (const char* gpu : kGpus) {
      if (!GpuHealth(h, gpu, true, replicas)) return false;
    }
    return true;
  }
};

TEST_F(DaemonSharingMpsTest, DaemonPerGpuWithLimitsAllocatePointsAtIt) {
  ASSERT_TRUE(kubelet_.Start());
  DaemonProcess plugin(
      "pcie-t4",
      {"--config-file", config_, "--kubelet-socket", kubelet_.socket_path()},
      log_);
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin.Log();
  stub_ = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
      "unix://" + dir_ + "/" + kGpuSocket, grpc::InsecureChannelCredentials()));
  context_.set_deadline(absl::ToChronoTime(absl::Now() + 5 * kTimeout));
  stream_ = stub_->ListAndWatch(&context_, v1beta1::Empty());

  // Healthy once each GPU's daemon is up: exclusive, with NVIDIA's limits
  // for 2 replicas of 15360 MiB (7680 MiB, 50%).
  ASSERT_TRUE(WaitForHealth([](const Health& h) { return AllHealthy(h); }))
      << Describe() << plugin.Log();
  for (const char* gpu : kGpus) {
    EXPECT_EQ(LastStartField(Log(gpu), "CUDA_VISIBLE_DEVICES"), gpu);
    EXPECT_TRUE(LimitsAfterLastStart(gpu, "7680", 50)) << Log(gpu);
    EXPECT_THAT(SmiLog(),
                HasSubstr(absl::StrCat("-i ", gpu, " -c EXCLUSIVE_PROCESS\n")));
  }

  // Allocate: NVIDIA's container paths, sourced from the pipe and shm
  // directories of the daemon that serves the replica's GPU.
  v1beta1::AllocateRequest allocate;
  allocate.add_container_requests()->add_devices_ids(
      absl::StrCat(kGpus[1], "::1"));
  v1beta1::AllocateResponse allocated;
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kTimeout));
    ASSERT_TRUE(stub_->Allocate(&context, allocate, &allocated).ok());
  }
  const auto& answer = allocated.container_responses(0);
  const std::string pipe = "/mps/nvidia.com/gpu/pipe";
  EXPECT_EQ(answer.envs().at("CUDA_MPS_PIPE_DIRECTORY"), pipe);
  std::map<std::string, std::string> mounts;
  for (const auto& m : answer.mounts()) {
    mounts[m.container_path()] = m.host_path();
  }
  const std::string daemon_pipe =
      LastStartField(Log(kGpus[1]), "CUDA_MPS_PIPE_DIRECTORY");
  ASSERT_FALSE(daemon_pipe.empty()) << Log(kGpus[1]);
  EXPECT_EQ(mounts[pipe], daemon_pipe);
  EXPECT_EQ(mounts["/dev/shm"], absl::StrCat(mps_, "/", kGpus[1], "/shm"));

  // GPU 0's daemon is killed by its PID: exactly GPU 0's replicas go
  // Unhealthy, and come back when the supervisor has started it again.
  const pid_t first = LastPid(kGpus[0]);
  ASSERT_GT(first, 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(WaitForHealth([](const Health& h) {
    return GpuHealth(h, kGpus[0], false) && GpuHealth(h, kGpus[1], true) &&
           GpuHealth(h, kGpus[2], true) && GpuHealth(h, kGpus[3], true);
  })) << Describe()
      << plugin.Log();
  ASSERT_TRUE(WaitForHealth([](const Health& h) { return AllHealthy(h); }))
      << Describe() << plugin.Log();
  EXPECT_NE(LastPid(kGpus[0]), first);
  EXPECT_TRUE(LimitsAfterLastStart(kGpus[0], "7680", 50)) << Log(kGpus[0]);

  // 2 -> 4 replicas: the daemons start over with 3840 MiB and 25%.
  WriteConfig(4);
  plugin.Signal(SIGHUP);
  ASSERT_TRUE(plugin.WaitForLog("configuration reloaded", kTimeout))
      << plugin.Log();
  for (const char* gpu : kGpus) {
    EXPECT_TRUE(Eventually([&] {
      return LimitsAfterLastStart(gpu, "3840", 25);
    })) << Log(gpu);
  }
  ASSERT_TRUE(WaitForHealth([](const Health& h) { return AllHealthy(h, 4); }))
      << Describe() << plugin.Log();

  // sharing.mps dropped: each daemon quits, the compute mode is DEFAULT.
  const pid_t last = LastPid(kGpus[2]);
  WriteConfig(0);
  plugin.Signal(SIGHUP);
  for (const char* gpu : kGpus) {
    EXPECT_TRUE(Eventually([&] {
      return absl::StrContains(SmiLog(),
                               absl::StrCat("-i ", gpu, " -c DEFAULT\n"));
    })) << SmiLog();
  }
  EXPECT_TRUE(
      Eventually([&] { return ::kill(last, 0) != 0 && errno == ESRCH; }));
  EXPECT_THAT(Log(kGpus[2]), HasSubstr("command quit\n"));

  context_.TryCancel();
  plugin.Signal(SIGTERM);
  EXPECT_EQ(plugin.WaitExit(kTimeout), 0) << plugin.Log();
}

}  // namespace
}  // namespace gpulet::testing
