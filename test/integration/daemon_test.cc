// `gpulet plugin` end to end: the real binary, the NVML simulator loaded
// through the production dlopen path, and a fake kubelet that registers the
// plugin the way the kubelet does (dialling it back inside Register).
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/integration/daemon_fake_kubelet.h"
#include "test/integration/daemon_process.h"
#include "test/integration/device_health.h"
#include "test/integration/gpulet_runner.h"

namespace gpulet::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr absl::Duration kTimeout = absl::Seconds(20);
constexpr char kSocket[] = "gpulet-gpu.sock";

std::unique_ptr<v1beta1::DevicePlugin::Stub> Dial(const std::string& path) {
  return v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
      "unix://" + path, grpc::InsecureChannelCredentials()));
}

std::optional<v1beta1::ListAndWatchResponse> FirstListAndWatch(
    const std::string& path) {
  auto stub = Dial(path);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kTimeout));
  auto reader = stub->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  bool ok = reader->Read(&response);
  context.TryCancel();
  reader->Finish().ok();
  if (!ok) return std::nullopt;
  return response;
}

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    std::filesystem::create_directory(dir_);
  }

  std::unique_ptr<DaemonProcess> StartPlugin(
      const std::string& machine, std::vector<std::string> args = {},
      const std::vector<std::string>& env = {}) {
    args.push_back("--kubelet-socket");
    args.push_back(kubelet_.socket_path());
    return std::make_unique<DaemonProcess>(machine, args, log_, env);
  }

  // Registered, serving, and the socket is there.
  void ExpectRegistrations(DaemonProcess& plugin, int n) {
    ASSERT_TRUE(kubelet_.WaitForRegistrations(n, kTimeout))
        << "registrations " << kubelet_.registration_count() << " of " << n
        << "\n--- plugin log\n"
        << plugin.Log();
  }

  std::string SocketPath() const { return dir_ + "/" + kSocket; }

  TempDir tmp_;
  std::string dir_ = tmp_.path() + "/plugins";
  std::string log_ = tmp_.path() + "/gpulet.log";
  FakeKubelet kubelet_{dir_};
};

TEST_F(DaemonTest, RegistersOnceAndServesEightGpusWithNuma) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = StartPlugin("dgx-h100");
  ExpectRegistrations(*plugin, 1);
  auto reg = kubelet_.registrations().at(0);
  EXPECT_EQ(reg.version(), "v1beta1");
  EXPECT_EQ(reg.endpoint(), kSocket);
  EXPECT_EQ(reg.resource_name(), "nvidia.com/gpu");
  EXPECT_TRUE(reg.options().get_preferred_allocation_available());
  EXPECT_FALSE(reg.options().pre_start_required());

  auto list = FirstListAndWatch(SocketPath());
  ASSERT_TRUE(list.has_value());
  ASSERT_EQ(list->devices_size(), 8);
  const HealthById all_healthy = ExpectedHealth(ProfileGpuUuids("dgx-h100"));
  EXPECT_EQ(HealthDiff(AdvertisedHealth(*list), all_healthy), "");
  int on_node1 = 0;
  for (const auto& device : list->devices()) {
    EXPECT_THAT(device.id(), StartsWith("GPU-"));
    EXPECT_EQ(device.health(), "Healthy");
    ASSERT_EQ(device.topology().nodes_size(), 1) << device.id();
    on_node1 += device.topology().nodes(0).id() == 1 ? 1 : 0;
  }
  EXPECT_EQ(on_node1, 4);

  v1beta1::AllocateRequest request;
  auto* container = request.add_container_requests();
  container->add_devices_ids(list->devices(0).id());
  container->add_devices_ids(list->devices(5).id());
  v1beta1::AllocateResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(Dial(SocketPath())->Allocate(&context, request, &response).ok());
  ASSERT_EQ(response.container_responses_size(), 1);
  EXPECT_EQ(response.container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"),
            list->devices(0).id() + "," + list->devices(5).id());

  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
  EXPECT_FALSE(std::filesystem::exists(SocketPath()));
  EXPECT_TRUE(std::filesystem::exists(kubelet_.socket_path()));
  EXPECT_EQ(kubelet_.registration_count(), 1);
  EXPECT_THAT(kubelet_.rejections(), ::testing::IsEmpty());
}

// With passDeviceSpecs, each GPU's device spec is the driver's
// /dev/nvidia<minor>, written out here from sim/profiles/dgx-h100.yaml
// (minors are not indexes there): GPU 0 (index 0) is /dev/nvidia2, GPU 5
// /dev/nvidia8.
TEST_F(DaemonTest, DeviceSpecsAreTheGpusMinorsNotIndexes) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = StartPlugin("dgx-h100", {"--pass-device-specs"});
  ExpectRegistrations(*plugin, 1);
  const std::pair<const char*, const char*> cases[] = {
      {"GPU-9605369a-4cef-521f-904b-cafb54df34d0", "/dev/nvidia2"},
      {"GPU-5e3a5380-1a96-5e70-ab29-387692334a60", "/dev/nvidia8"},
      {"GPU-f0721ffb-e66f-52de-a86e-1c9b040c372a", "/dev/nvidia0"}};
  for (const auto& [uuid, node] : cases) {
    v1beta1::AllocateRequest request;
    request.add_container_requests()->add_devices_ids(uuid);
    v1beta1::AllocateResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kTimeout));
    grpc::Status status =
        Dial(SocketPath())->Allocate(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message() << plugin->Log();
    ASSERT_EQ(response.container_responses_size(), 1);
    std::vector<std::string> gpu_nodes;
    for (const auto& spec : response.container_responses(0).devices()) {
      // The control nodes are there only where this host has them.
      if (!absl::StartsWith(spec.container_path(), "/dev/nvidia") ||
          !absl::ascii_isdigit(
              static_cast<unsigned char>(spec.container_path().back()))) {
        continue;
      }
      gpu_nodes.push_back(spec.container_path());
      EXPECT_THAT(spec.host_path(), ::testing::EndsWith(node)) << uuid;
    }
    EXPECT_THAT(gpu_nodes, ::testing::ElementsAre(node)) << uuid;
  }
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

TEST_F(DaemonTest, ReRegistersOnEveryKubeletRestartWithoutLeaking) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = StartPlugin("dgx-h100");
  ExpectRegistrations(*plugin, 1);
  const int fds = plugin->OpenFds();
  const int threads = plugin->Threads();
  constexpr int kRestarts = 20;
  for (int i = 1; i <= kRestarts; ++i) {
    kubelet_.Restart();
    ExpectRegistrations(*plugin, 1 + i);
  }
  ASSERT_TRUE(std::filesystem::exists(SocketPath()));
  ASSERT_TRUE(FirstListAndWatch(SocketPath()).has_value());
  EXPECT_LE(plugin->OpenFds(), fds + 4) << "fds before: " << fds;
  EXPECT_LE(plugin->Threads(), threads + 4) << "threads before: " << threads;
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
  // Exactly one registration per kubelet start, however the inotify events
  // of a restart were batched.
  EXPECT_EQ(kubelet_.registration_count(), 1 + kRestarts) << plugin->Log();
}

TEST_F(DaemonTest, ReRegistersWhenItsSocketIsDeleted) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = StartPlugin("dgx-h100");
  ExpectRegistrations(*plugin, 1);
  for (int i = 2; i <= 3; ++i) {
    ASSERT_EQ(::unlink(SocketPath().c_str()), 0);
    ExpectRegistrations(*plugin, i);
    EXPECT_TRUE(FirstListAndWatch(SocketPath()).has_value());
  }
  EXPECT_THAT(plugin->Log(), HasSubstr("was deleted"));
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
  EXPECT_EQ(kubelet_.registration_count(), 3);
}

// kubelet v1.36's device manager disconnects the client it has just
// registered when an older client's stream of the same resource ends late
// (the harness's socket-deleted scenario met it under load): the resource
// sits at 0 allocatable until the plugin registers again.
TEST_F(DaemonTest, RegistersAgainWhenTheKubeletStopsWatching) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = StartPlugin("dgx-h100");
  ExpectRegistrations(*plugin, 1);
  ASSERT_TRUE(kubelet_.WaitWatching(1, kTimeout)) << plugin->Log();
  // Another client's stream coming and going is not the kubelet's.
  ASSERT_TRUE(FirstListAndWatch(SocketPath()).has_value());
  for (int i = 2; i <= 3; ++i) {
    ASSERT_TRUE(kubelet_.DropLatestWatch());
    ExpectRegistrations(*plugin, i);
    ASSERT_TRUE(kubelet_.WaitWatching(i, kTimeout)) << plugin->Log();
  }
  EXPECT_THAT(plugin->Log(),
              HasSubstr("the kubelet stopped watching nvidia.com/gpu"));
  // The server was kept: the plugin registered again, it did not restart.
  EXPECT_THAT(plugin->Log(), Not(HasSubstr("restarting nvidia.com/gpu")));
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
  EXPECT_EQ(kubelet_.registration_count(), 3) << plugin->Log();
}

TEST_F(DaemonTest, SurvivesThePluginDirectoryBeingRecreated) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = StartPlugin("dgx-h100");
  ExpectRegistrations(*plugin, 1);
  kubelet_.Stop();
  // The plugin may recreate its socket (it saw it deleted) while the
  // directory is being emptied; remove until the directory is gone.
  absl::Time deadline = absl::Now() + kTimeout;
  std::error_code error;
  while (std::filesystem::exists(dir_) && absl::Now() < deadline) {
    std::filesystem::remove_all(dir_, error);
  }
  ASSERT_FALSE(std::filesystem::exists(dir_)) << error.message();
  ASSERT_TRUE(plugin->WaitForLog("was removed", kTimeout)) << plugin->Log();
  std::filesystem::create_directory(dir_);
  ASSERT_TRUE(kubelet_.Start());
  ExpectRegistrations(*plugin, 2);
  EXPECT_TRUE(FirstListAndWatch(SocketPath()).has_value());
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
  EXPECT_EQ(kubelet_.registration_count(), 2) << plugin->Log();
}

// A reload that changes nothing leaves the registration and the socket as
// they are (the kubelet would otherwise see the resource go and come back).
TEST_F(DaemonTest, SighupReloadsWithoutReRegistering) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = StartPlugin("dgx-h100");
  ExpectRegistrations(*plugin, 1);
  plugin->Signal(SIGHUP);
  ASSERT_TRUE(plugin->WaitForLog("configuration reloaded", kTimeout))
      << plugin->Log();
  EXPECT_TRUE(plugin->Running());
  auto list = FirstListAndWatch(SocketPath());
  ASSERT_TRUE(list.has_value());
  const HealthById all_healthy = ExpectedHealth(ProfileGpuUuids("dgx-h100"));
  EXPECT_EQ(HealthDiff(AdvertisedHealth(*list), all_healthy), "");
  EXPECT_THAT(plugin->Log(), HasSubstr("received SIGHUP; reloading"));
  EXPECT_EQ(kubelet_.registration_count(), 1) << plugin->Log();
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

// A kubelet that accepts connections but never answers holds each Register
// for its whole timeout (10 s); with MIG mixed that is four resources one
// after the other. SIGTERM must not wait for them: the pod's grace period
// (30 s by default) would run out first.
TEST_F(DaemonTest, SigtermDuringAStuckRegistrationStopsAtOnce) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  const std::string path = kubelet_.socket_path();
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 64), 0);  // never accepted, never answered
  const std::string config = tmp_.path() + "/config.yaml";
  std::ofstream(config) << "version: v1\nflags:\n  migStrategy: mixed\n";
  auto plugin = StartPlugin("a100-mig", {"--config-file", config});
  ASSERT_TRUE(plugin->WaitForLog("starting nvidia.com/gpu", kTimeout))
      << plugin->Log();
  plugin->Signal(SIGTERM);
  // Far below one registration timeout, let alone four.
  EXPECT_EQ(plugin->WaitExit(absl::Seconds(8)), 0) << plugin->Log();
  ::close(fd);
}

TEST_F(DaemonTest, WaitsForTheKubeletAndRegistersWhenItAppears) {
  auto plugin = StartPlugin("dgx-h100");
  ASSERT_TRUE(plugin->WaitForLog("UNAVAILABLE", kTimeout)) << plugin->Log();
  ASSERT_TRUE(kubelet_.Start());
  ExpectRegistrations(*plugin, 1);
  plugin->Signal(SIGINT);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
  EXPECT_FALSE(std::filesystem::exists(SocketPath()));
}

struct InitFailureCase {
  const char* machine;
  const char* message;
};

void PrintTo(const InitFailureCase& c, std::ostream* os) { *os << c.machine; }

class InitFailureTest : public DaemonTest,
                        public ::testing::WithParamInterface<InitFailureCase> {
};

TEST_P(InitFailureTest, FailOnInitErrorExitsOne) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = StartPlugin(GetParam().machine, {"--fail-on-init-error=true"});
  EXPECT_EQ(plugin->WaitExit(kTimeout), 1) << plugin->Log();
  EXPECT_THAT(plugin->Log(), HasSubstr(GetParam().message));
  EXPECT_THAT(plugin->Log(), HasSubstr("failOnInitError=true"));
  EXPECT_EQ(kubelet_.registration_count(), 0);
}

TEST_P(InitFailureTest, WithoutFailOnInitErrorWaitsIdleUntilSigterm) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin =
      StartPlugin(GetParam().machine, {}, {"FAIL_ON_INIT_ERROR=false"});
  ASSERT_TRUE(plugin->WaitForLog("waiting indefinitely", kTimeout))
      << plugin->Log();
  const long ticks = plugin->CpuTicks();
  absl::SleepFor(absl::Seconds(1));  // measuring idleness, not ordering
  EXPECT_TRUE(plugin->Running());
  // Blocked in a wait: at most a couple of clock ticks (10 ms each).
  EXPECT_LE(plugin->CpuTicks() - ticks, 2);
  EXPECT_EQ(kubelet_.registration_count(), 0);
  EXPECT_FALSE(std::filesystem::exists(SocketPath()));
  EXPECT_THAT(plugin->Log(), HasSubstr(GetParam().message));
  // SIGHUP tries again from the start, and waits again.
  plugin->Signal(SIGHUP);
  ASSERT_TRUE(plugin->WaitForLog("received SIGHUP; starting again", kTimeout))
      << plugin->Log();
  EXPECT_TRUE(plugin->Running());
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

INSTANTIATE_TEST_SUITE_P(
    Profiles, InitFailureTest,
    ::testing::Values(
        InitFailureCase{"no-driver",
                        "failed to initialize NVML: nvmlInit_v2: Driver Not "
                        "Loaded [NVML_ERROR_DRIVER_NOT_LOADED]"},
        InitFailureCase{"none", "No devices found"}),
    [](const ::testing::TestParamInfo<InitFailureCase>& param_info) {
      return std::string(param_info.param.machine) == "none" ? "NoGpus"
                                                             : "NoDriver";
    });

TEST_F(DaemonTest, BadFlagValuesAreUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> env;
    const char* message;
  } cases[] = {
      {{"--fail-on-init-error=maybe"}, {}, "--fail-on-init-error"},
      {{}, {"DP_DISABLE_HEALTHCHECKS=4x"}, "DP_DISABLE_HEALTHCHECKS"},
  };
  for (const Case& c : cases) {
    std::filesystem::remove(log_);
    auto plugin = StartPlugin("dgx-h100", c.args, c.env);
    EXPECT_EQ(plugin->WaitExit(kTimeout), 2) << plugin->Log();
    EXPECT_THAT(plugin->Log(), HasSubstr(c.message));
  }
  EXPECT_EQ(kubelet_.registration_count(), 0);
}

}  // namespace
}  // namespace gpulet::testing
