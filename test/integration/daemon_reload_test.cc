// Configuration reloads (SIGHUP) of a running `gpulet plugin`, against the
// NVML simulator and the fake kubelet: what a reload must keep (health,
// registrations, open ListAndWatch streams, the other GPUs when one is
// lost) and what it may change (the devices of a resource, in place).
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sim/control_client.h"
#include "test/integration/daemon_fake_kubelet.h"
#include "test/integration/daemon_process.h"
#include "test/integration/device_health.h"
#include "test/integration/gpulet_runner.h"

namespace gpulet::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Generous: only reached when something is broken.
constexpr absl::Duration kTimeout = absl::Seconds(30);

using Devices = v1beta1::ListAndWatchResponse;

// One ListAndWatch stream held open for the whole test, as the kubelet
// holds it: every message is kept, and the stream's end is noticed.
class Watch {
 public:
  explicit Watch(const std::string& socket_path)
      : stub_(v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
            "unix://" + socket_path, grpc::InsecureChannelCredentials()))),
        thread_([this] { Run(); }) {}
  ~Watch() {
    context_.TryCancel();
    thread_.join();
  }

  // Waits until the latest message satisfies `done`; false at the timeout
  // or when the stream ended first.
  bool WaitUntil(const std::function<bool(const Devices&)>& done) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return ended_ || (!messages_.empty() && done(messages_.back()));
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), kTimeout);
    return !messages_.empty() && done(messages_.back());
  }
  bool ended() {
    absl::MutexLock lock(&mu_);
    return ended_;
  }
  Devices latest() {
    absl::MutexLock lock(&mu_);
    return messages_.empty() ? Devices() : messages_.back();
  }
  // Until the latest message advertises exactly `want`: every device of
  // it, with its health, and no other.
  bool WaitForHealth(const HealthById& want) {
    return WaitUntil(
        [&](const Devices& l) { return AdvertisedHealth(l) == want; });
  }
  // How the latest message differs from `want`.
  std::string Describe(const HealthById& want) {
    const std::string diff = HealthDiff(AdvertisedHealth(latest()), want);
    return absl::StrCat(ended() ? "stream ended; " : "stream open; ",
                        diff.empty() ? "latest message as wanted"
                                     : "latest message differs:\n" + diff);
  }

 private:
  void Run() {
    auto reader = stub_->ListAndWatch(&context_, v1beta1::Empty());
    Devices response;
    while (reader->Read(&response)) {
      absl::MutexLock lock(&mu_);
      messages_.push_back(response);
    }
    reader->Finish().ok();
    absl::MutexLock lock(&mu_);
    ended_ = true;
  }

  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  grpc::ClientContext context_;
  absl::Mutex mu_;
  std::vector<Devices> messages_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

constexpr char kPlain[] = "version: v1\n";

std::string TimeSlicing(int replicas) {
  return absl::StrCat(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: ",
      replicas, "\n");
}

constexpr char kMigMixed[] = "version: v1\nflags:\n  migStrategy: mixed\n";

class DaemonReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    std::filesystem::create_directory(dir_);
  }

  void WriteConfig(const std::string& text) {
    // Written whole and renamed, as a config-manager sidecar does.
    std::string tmp = config_ + ".tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, config_);
  }

  std::unique_ptr<DaemonProcess> Start(const std::string& machine,
                                       const std::string& config,
                                       std::vector<std::string> env = {}) {
    WriteConfig(config);
    env.push_back("GPULET_SIM_SOCKET=" + sim_socket_);
    return std::make_unique<DaemonProcess>(
        machine,
        std::vector<std::string>{"--config-file", config_, "--kubelet-socket",
                                 kubelet_.socket_path()},
        log_, env);
  }

  void Sim(const std::string& command) {
    absl::StatusOr<std::string> reply =
        sim::SendControlCommand(sim_socket_, command);
    ASSERT_TRUE(reply.ok()) << command << ": " << reply.status();
  }

  int Unrouted() {
    absl::StatusOr<std::string> reply =
        sim::SendControlCommand(sim_socket_, "status");
    if (!reply.ok()) return -1;
    auto status = nlohmann::json::parse(*reply, nullptr, false);
    if (status.is_discarded()) return -1;
    return status["events"]["unrouted"].get<int>();
  }

  // SIGHUP, then the log line that says how the reload ended.
  void Reload(DaemonProcess& plugin, const std::string& outcome) {
    plugin.Signal(SIGHUP);
    WaitForCount(plugin, outcome, 1);
  }

  // Until the log holds `outcome` at least n times.
  void WaitForCount(DaemonProcess& plugin, const std::string& outcome, int n) {
    absl::Time deadline = absl::Now() + kTimeout;
    while (absl::Now() < deadline && Count(plugin.Log(), outcome) < n) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    ASSERT_GE(Count(plugin.Log(), outcome), n) << plugin.Log();
  }

  static int Count(const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos;
         at = text.find(what, at + 1)) {
      ++n;
    }
    return n;
  }

  std::string Socket(const std::string& name = "gpulet-gpu.sock") const {
    return dir_ + "/" + name;
  }

  TempDir tmp_;
  std::string dir_ = tmp_.path() + "/plugins";
  std::string log_ = tmp_.path() + "/gpulet.log";
  std::string config_ = tmp_.path() + "/config.yaml";
  std::string sim_socket_ = tmp_.path() + "/sim.sock";
  FakeKubelet kubelet_{dir_};
};

// The dgx-h100 GPUs by NVML index, from the simulator's profile: what each
// test below expects by ID.
const std::vector<std::string>& H100s() {
  static const auto* uuids =
      new std::vector<std::string>(ProfileGpuUuids("dgx-h100"));
  return *uuids;
}

// The replica IDs of the dgx-h100 GPUs at `indexes`.
std::vector<std::string> ReplicasOf(std::vector<int> indexes, int replicas) {
  std::vector<std::string> uuids;
  for (int i : indexes) uuids.push_back(H100s().at(i));
  return ReplicaIds(uuids, replicas);
}

// A lost GPU makes discovery fail for that GPU; a reload then must keep
// serving the other seven (it exited, taking them all away), with the lost
// one Unhealthy, and bring it back when the GPU returns.
TEST_F(DaemonReloadTest, ALostGpuDoesNotStopAReloadFromServingTheOthers) {
  ASSERT_EQ(H100s().size(), 8u);
  const HealthById all_healthy = ExpectedHealth(H100s());
  const HealthById gpu2_lost = ExpectedHealth(H100s(), {H100s()[2]});
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("dgx-h100", kPlain, {"GPULET_HEALTH_QUIET_PERIOD=0s"});
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  Watch watch(Socket());
  ASSERT_TRUE(watch.WaitForHealth(all_healthy)) << watch.Describe(all_healthy);
  Sim("lose 2");
  ASSERT_TRUE(watch.WaitForHealth(gpu2_lost))
      << watch.Describe(gpu2_lost) << "\n"
      << plugin->Log();

  Reload(*plugin, "configuration reloaded");
  EXPECT_TRUE(plugin->Running()) << plugin->Log();
  EXPECT_THAT(plugin->Log(), HasSubstr("GPU 2 (GPU-"));
  EXPECT_THAT(plugin->Log(), HasSubstr("its devices are advertised Unhealthy"));
  EXPECT_FALSE(watch.ended()) << plugin->Log();
  EXPECT_EQ(HealthDiff(AdvertisedHealth(watch.latest()), gpu2_lost), "");
  EXPECT_EQ(kubelet_.registration_count(), 1) << plugin->Log();

  Sim("restore 2");
  EXPECT_TRUE(watch.WaitForHealth(all_healthy))
      << watch.Describe(all_healthy) << "\n"
      << plugin->Log();
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

// A GPU that fails discovery at a reload without the health monitor ever
// seeing a fault for it (here its Xid 79 is ignored; under an Xid storm
// NVML's event queue may drop it) must still come back: the monitor probes
// it like any unhealthy GPU. It used to stay Unhealthy until the next
// reload (found by the chaos soak, seed 21 on islands-16).
TEST_F(DaemonReloadTest, AGpuThatFailedDiscoveryRecoversWithoutAnEvent) {
  ASSERT_EQ(H100s().size(), 8u);
  const HealthById all_healthy = ExpectedHealth(H100s());
  const HealthById gpu2_lost = ExpectedHealth(H100s(), {H100s()[2]});
  ASSERT_TRUE(kubelet_.Start());
  auto plugin =
      Start("dgx-h100", kPlain,
            {"GPULET_HEALTH_QUIET_PERIOD=0s", "DP_DISABLE_HEALTHCHECKS=79"});
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  Watch watch(Socket());
  ASSERT_TRUE(watch.WaitForHealth(all_healthy)) << watch.Describe(all_healthy);
  Sim("lose 2");
  Reload(*plugin, "configuration reloaded");
  ASSERT_TRUE(watch.WaitForHealth(gpu2_lost))
      << watch.Describe(gpu2_lost) << "\n"
      << plugin->Log();

  Sim("restore 2");
  EXPECT_TRUE(watch.WaitForHealth(all_healthy))
      << watch.Describe(all_healthy) << "\n"
      << plugin->Log();
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

// A file that fails validation changes nothing: no re-registration, the
// stream stays open, the unhealthy GPU stays unhealthy, and the monitor
// still acts on the next fault.
TEST_F(DaemonReloadTest, ARejectedFileChangesNothing) {
  const std::vector<std::string> replicas =
      ReplicasOf({0, 1, 2, 3, 4, 5, 6, 7}, 4);
  const HealthById all_healthy = ExpectedHealth(replicas);
  const HealthById gpu1_down = ExpectedHealth(replicas, ReplicasOf({1}, 4));
  const HealthById gpus13_down =
      ExpectedHealth(replicas, ReplicasOf({1, 3}, 4));
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("dgx-h100", TimeSlicing(4));
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  Watch watch(Socket());
  ASSERT_TRUE(watch.WaitForHealth(all_healthy)) << watch.Describe(all_healthy);
  Sim("xid 1 79");
  ASSERT_TRUE(watch.WaitForHealth(gpu1_down)) << watch.Describe(gpu1_down);

  WriteConfig(TimeSlicing(1));
  Reload(*plugin, "configuration not reloaded, keeping the previous one");
  EXPECT_THAT(plugin->Log(), HasSubstr("replicas"));
  EXPECT_EQ(HealthDiff(AdvertisedHealth(watch.latest()), gpu1_down), "");
  Sim("xid 3 79");
  EXPECT_TRUE(watch.WaitForHealth(gpus13_down))
      << watch.Describe(gpus13_down) << "\n"
      << plugin->Log();
  EXPECT_FALSE(watch.ended());
  EXPECT_EQ(kubelet_.registration_count(), 1) << plugin->Log();
  EXPECT_THAT(plugin->Log(), Not(HasSubstr("stopped serving")));
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

// A reload that changes the replica count changes the resource in place on
// the open stream, and the GPU that had Xid 79 stays unhealthy in the new
// device list (it came back Healthy).
TEST_F(DaemonReloadTest, HealthSurvivesAReloadThatChangesReplicas) {
  const std::vector<int> every = {0, 1, 2, 3, 4, 5, 6, 7};
  const HealthById four_gpu6_down =
      ExpectedHealth(ReplicasOf(every, 4), ReplicasOf({6}, 4));
  const HealthById two_gpu6_down =
      ExpectedHealth(ReplicasOf(every, 2), ReplicasOf({6}, 2));
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("dgx-h100", TimeSlicing(4));
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  Watch watch(Socket());
  Sim("xid 6 79");
  ASSERT_TRUE(watch.WaitForHealth(four_gpu6_down))
      << watch.Describe(four_gpu6_down);

  WriteConfig(TimeSlicing(2));
  Reload(*plugin, "configuration reloaded");
  EXPECT_TRUE(watch.WaitUntil([](const Devices& l) {
    return l.devices_size() == 16;
  })) << watch.Describe(two_gpu6_down);
  EXPECT_EQ(HealthDiff(AdvertisedHealth(watch.latest()), two_gpu6_down), "");
  EXPECT_FALSE(watch.ended());
  EXPECT_EQ(kubelet_.registration_count(), 1) << plugin->Log();
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

// MIG mixed, unchanged file: the MIG devices of the GPU that had Xid 79
// stay unhealthy, and no resource registers again. GPU 0's 1g.5gb device
// shares the resource and stays Healthy throughout.
TEST_F(DaemonReloadTest, MigHealthSurvivesAnUnchangedReload) {
  const std::vector<std::string> small = ProfileMigUuids("a100-mig", "1g.5gb");
  const std::vector<std::string> on_gpu1 =
      ProfileMigUuids("a100-mig", "1g.5gb", 1);
  ASSERT_EQ(small.size(), 8u);
  ASSERT_EQ(on_gpu1.size(), 7u);
  const HealthById all_healthy = ExpectedHealth(small);
  const HealthById gpu1_down = ExpectedHealth(small, on_gpu1);
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("a100-mig", kMigMixed);
  // Every resource registered once before the count is taken.
  absl::Time deadline = absl::Now() + kTimeout;
  while (absl::Now() < deadline &&
         (Count(plugin->Log(), "starting nvidia.com/") == 0 ||
          Count(plugin->Log(), "registered nvidia.com/") <
              Count(plugin->Log(), "starting nvidia.com/"))) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_GT(Count(plugin->Log(), "registered nvidia.com/mig-1g.5gb"), 0)
      << plugin->Log();
  Watch watch(Socket("gpulet-mig-1g.5gb.sock"));
  ASSERT_TRUE(watch.WaitForHealth(all_healthy)) << watch.Describe(all_healthy);
  Sim("xid 1 79");
  ASSERT_TRUE(watch.WaitForHealth(gpu1_down))
      << watch.Describe(gpu1_down) << "\n"
      << plugin->Log();
  const int registrations = kubelet_.registration_count();

  Reload(*plugin, "configuration reloaded");
  EXPECT_EQ(HealthDiff(AdvertisedHealth(watch.latest()), gpu1_down), "");
  EXPECT_FALSE(watch.ended());
  EXPECT_EQ(kubelet_.registration_count(), registrations) << plugin->Log();
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

// An Xid injected while a reload runs is delivered (the simulator routes it
// to a watching event set) and acted on.
TEST_F(DaemonReloadTest, AnXidDuringAReloadIsNotLost) {
  const std::vector<int> every = {0, 1, 2, 3, 4, 5, 6, 7};
  const HealthById two_healthy = ExpectedHealth(ReplicasOf(every, 2));
  // Back at 3 replicas per GPU after round 3, with GPUs 4, 5 and 6 down.
  const HealthById three_gpus456_down =
      ExpectedHealth(ReplicasOf(every, 3), ReplicasOf({4, 5, 6}, 3));
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("dgx-h100", TimeSlicing(2));
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  Watch watch(Socket());
  ASSERT_TRUE(watch.WaitForHealth(two_healthy)) << watch.Describe(two_healthy);
  for (int round = 1; round <= 3; ++round) {
    WriteConfig(TimeSlicing(round % 2 == 0 ? 2 : 3));
    plugin->Signal(SIGHUP);
    Sim(absl::StrCat("xid ", round + 3, " 79"));
    ASSERT_NO_FATAL_FAILURE(
        WaitForCount(*plugin, "configuration reloaded", round));
  }
  EXPECT_TRUE(watch.WaitForHealth(three_gpus456_down))
      << watch.Describe(three_gpus456_down) << "\n"
      << plugin->Log();
  EXPECT_EQ(Unrouted(), 0);
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

}  // namespace
}  // namespace gpulet::testing
