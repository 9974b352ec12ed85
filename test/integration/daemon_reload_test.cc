// Configuration reloads (SIGHUP) of a running `gpulet plugin`, against the
// NVML simulator and the fake kubelet: what a reload must keep (health,
// registrations, open ListAndWatch streams, the other GPUs when one is
// lost) and what it may change (the devices of a resource, in place).
#include <signal.h>

#include <algorithm>
#include <cstdint>
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
#include "test/integration/plugin_watch.h"

namespace gpulet::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// Generous: only reached when something is broken.
constexpr absl::Duration kTimeout = absl::Seconds(30);

constexpr char kPlain[] = "version: v1\n";

std::string TimeSlicing(int replicas) {
  return absl::StrCat(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: ",
      replicas, "\n");
}

constexpr char kMigMixed[] = "version: v1\nflags:\n  migStrategy: mixed\n";

// Time-slicing under the shared name, nvidia.com/gpu.shared.
std::string SharedTimeSlicing(int replicas) {
  return absl::StrCat(
      "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
      "    resources:\n    - name: nvidia.com/gpu\n      replicas: ",
      replicas, "\n");
}

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

  // `args` come after gpulet's own (the config file, the kubelet socket).
  std::unique_ptr<DaemonProcess> Start(const std::string& machine,
                                       const std::string& config,
                                       std::vector<std::string> env = {},
                                       std::vector<std::string> args = {}) {
    WriteConfig(config);
    env.push_back("GPULET_SIM_SOCKET=" + sim_socket_);
    std::vector<std::string> all = {"--config-file", config_,
                                    "--kubelet-socket", kubelet_.socket_path()};
    all.insert(all.end(), args.begin(), args.end());
    return std::make_unique<DaemonProcess>(machine, all, log_, env);
  }

  // The resource names the kubelet registered, in order.
  std::vector<std::string> Registered() const {
    std::vector<std::string> names;
    for (const auto& r : kubelet_.registrations()) {
      names.push_back(r.resource_name());
    }
    return names;
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

  // Defined with the tests that use it.
  void ExpectWholeGpusThroughAReload(std::vector<std::string> env,
                                     std::vector<std::string> args);

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
  const size_t lost = watch.size();

  Reload(*plugin, "configuration reloaded");
  EXPECT_TRUE(plugin->Running()) << plugin->Log();
  EXPECT_THAT(plugin->Log(), HasSubstr("GPU 2 (GPU-"));
  EXPECT_THAT(plugin->Log(), HasSubstr("its devices are advertised Unhealthy"));
  EXPECT_FALSE(watch.ended()) << plugin->Log();
  EXPECT_EQ(HealthDiff(AdvertisedHealth(watch.latest()), gpu2_lost), "");
  EXPECT_EQ(kubelet_.registration_count(), 1) << plugin->Log();
  EXPECT_EQ(watch.HealthyAmong(lost, {H100s()[2]}), "");

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
  const size_t down = watch.size();

  WriteConfig(TimeSlicing(1));
  Reload(*plugin, "configuration not reloaded, keeping the previous one");
  EXPECT_THAT(plugin->Log(), HasSubstr("replicas"));
  EXPECT_EQ(HealthDiff(AdvertisedHealth(watch.latest()), gpu1_down), "");
  Sim("xid 3 79");
  EXPECT_TRUE(watch.WaitForHealth(gpus13_down))
      << watch.Describe(gpus13_down) << "\n"
      << plugin->Log();
  EXPECT_FALSE(watch.ended());
  EXPECT_EQ(watch.HealthyAmong(down, {H100s()[1], H100s()[3]}), "")
      << "GPU 3 counts from its own fault on";
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
  const size_t down = watch.size();

  WriteConfig(TimeSlicing(2));
  Reload(*plugin, "configuration reloaded");
  EXPECT_TRUE(watch.WaitUntil([](const Devices& l) {
    return l.devices_size() == 16;
  })) << watch.Describe(two_gpu6_down);
  EXPECT_EQ(HealthDiff(AdvertisedHealth(watch.latest()), two_gpu6_down), "");
  EXPECT_EQ(watch.HealthyAmong(down, {H100s()[6]}), "");
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
  const size_t down = watch.size();

  Reload(*plugin, "configuration reloaded");
  EXPECT_EQ(HealthDiff(AdvertisedHealth(watch.latest()), gpu1_down), "");
  EXPECT_EQ(watch.HealthyAmong(down, on_gpu1), "");
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

// A reload that renames the resource (renameByDefault) serves and registers
// nvidia.com/gpu.shared, stops nvidia.com/gpu (its streams end, its socket
// goes) and carries GPU 6's fault over to the new resource's replicas; the
// way back does the reverse.
TEST_F(DaemonReloadTest, AReloadAddsAndRemovesResources) {
  const std::vector<int> every = {0, 1, 2, 3, 4, 5, 6, 7};
  const HealthById gpu6_down = ExpectedHealth(H100s(), {H100s()[6]});
  const HealthById shared_gpu6_down =
      ExpectedHealth(ReplicasOf(every, 2), ReplicasOf({6}, 2));
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("dgx-h100", kPlain);
  ASSERT_TRUE(kubelet_.WaitWatching(1, kTimeout)) << plugin->Log();
  Watch gpu(Socket());
  Sim("xid 6 79");
  ASSERT_TRUE(gpu.WaitForHealth(gpu6_down)) << gpu.Describe(gpu6_down);

  WriteConfig(SharedTimeSlicing(2));
  Reload(*plugin, "configuration reloaded");
  ASSERT_TRUE(kubelet_.WaitWatching(2, kTimeout)) << plugin->Log();
  EXPECT_THAT(Registered(),
              ElementsAre("nvidia.com/gpu", "nvidia.com/gpu.shared"));
  const std::string shared_socket =
      Socket(kubelet_.registrations().at(1).endpoint());
  Watch shared(shared_socket);
  EXPECT_TRUE(shared.WaitForHealth(shared_gpu6_down))
      << shared.Describe(shared_gpu6_down) << "\n"
      << plugin->Log();
  EXPECT_EQ(shared.HealthyAmong(0, {H100s()[6]}), "");
  EXPECT_TRUE(gpu.WaitEnded()) << "nvidia.com/gpu still served";
  EXPECT_FALSE(std::filesystem::exists(Socket()));

  WriteConfig(kPlain);
  plugin->Signal(SIGHUP);
  ASSERT_NO_FATAL_FAILURE(WaitForCount(*plugin, "configuration reloaded", 2));
  ASSERT_TRUE(kubelet_.WaitWatching(3, kTimeout)) << plugin->Log();
  EXPECT_THAT(
      Registered(),
      ElementsAre("nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/gpu"));
  EXPECT_TRUE(shared.WaitEnded()) << "nvidia.com/gpu.shared still served";
  EXPECT_FALSE(std::filesystem::exists(shared_socket));
  Watch again(Socket());
  EXPECT_TRUE(again.WaitForHealth(gpu6_down)) << again.Describe(gpu6_down);
  EXPECT_EQ(again.HealthyAmong(0, {H100s()[6]}), "");
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
  EXPECT_EQ(kubelet_.registration_count(), 3) << plugin->Log();
}

// health.disabled: true by a reload makes every GPU Healthy (nothing would
// bring GPU 1 back), and nothing watches for faults: an Xid on GPU 3 finds
// no event set. Turned on again, the checks act on the next fault, not on
// the one raised while they were off.
TEST_F(DaemonReloadTest, AReloadThatDisablesHealthChecks) {
  const HealthById all_healthy = ExpectedHealth(H100s());
  const HealthById gpu1_down = ExpectedHealth(H100s(), {H100s()[1]});
  const HealthById gpu5_down = ExpectedHealth(H100s(), {H100s()[5]});
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("dgx-h100", kPlain);
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  Watch watch(Socket());
  Sim("xid 1 79");
  ASSERT_TRUE(watch.WaitForHealth(gpu1_down)) << watch.Describe(gpu1_down);

  WriteConfig("version: v1\nhealth:\n  disabled: true\n");
  Reload(*plugin, "configuration reloaded");
  EXPECT_TRUE(watch.WaitForHealth(all_healthy))
      << watch.Describe(all_healthy) << "\n"
      << plugin->Log();
  EXPECT_THAT(plugin->Log(), HasSubstr("GPU health checks are disabled"));
  const size_t off = watch.size();
  const int unrouted = Unrouted();
  ASSERT_GE(unrouted, 0);
  Sim("xid 3 79");
  const absl::Time deadline = absl::Now() + kTimeout;
  while (Unrouted() == unrouted && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(Unrouted(), unrouted + 1) << "an event set still watches GPU 3";

  WriteConfig(kPlain);
  plugin->Signal(SIGHUP);
  ASSERT_NO_FATAL_FAILURE(WaitForCount(*plugin, "configuration reloaded", 2));
  Sim("xid 5 79");
  EXPECT_TRUE(watch.WaitForHealth(gpu5_down))
      << watch.Describe(gpu5_down) << "\n"
      << plugin->Log();
  for (size_t i = off; i < watch.size(); ++i) {
    EXPECT_EQ(watch.UnhealthyIn(i, H100s()[3]), false)
        << "GPU 3 advertised Unhealthy in message " << i;
  }
  EXPECT_FALSE(watch.ended());
  EXPECT_EQ(kubelet_.registration_count(), 1) << plugin->Log();
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

// Flags and environment variables keep overriding the file after a reload
// (docs/configuration.md): a100-mig has MIG on GPUs 0-2, and every file
// below says migStrategy: mixed, which would serve the MIG devices. With
// `env` and `args` saying none, the four GPUs are served whole, before and
// after a reload, and no MIG resource ever is.
void DaemonReloadTest::ExpectWholeGpusThroughAReload(
    std::vector<std::string> env, std::vector<std::string> args) {
  const HealthById whole = ExpectedHealth(ProfileGpuUuids("a100-mig"));
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("a100-mig", kMigMixed, env, args);
  ASSERT_TRUE(kubelet_.WaitWatching(1, kTimeout)) << plugin->Log();
  Watch watch(Socket());
  ASSERT_TRUE(watch.WaitForHealth(whole)) << watch.Describe(whole);

  WriteConfig(std::string(kMigMixed) + "  failOnInitError: false\n");
  Reload(*plugin, "configuration reloaded");
  EXPECT_EQ(HealthDiff(AdvertisedHealth(watch.latest()), whole), "");
  EXPECT_FALSE(watch.ended());
  EXPECT_THAT(Registered(), ElementsAre("nvidia.com/gpu")) << plugin->Log();
  EXPECT_THAT(plugin->Log(), Not(HasSubstr("starting nvidia.com/mig-")));
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

TEST_F(DaemonReloadTest, TheEnvironmentStillOverridesTheFileAfterAReload) {
  ExpectWholeGpusThroughAReload({"MIG_STRATEGY=none"}, {});
}

TEST_F(DaemonReloadTest, AFlagStillOverridesTheEnvironmentAfterAReload) {
  ExpectWholeGpusThroughAReload({"MIG_STRATEGY=mixed"},
                                {"--mig-strategy", "none"});
}

}  // namespace
}  // namespace gpulet::testing
