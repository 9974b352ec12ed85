// `gpulet plugin` with what the configuration turns on, over real sockets:
// the Prometheus endpoint (--metrics-address) reflecting registrations and
// an injected Xid, and a MIG-scoped Xid changing only that MIG device under
// migStrategy mixed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "sim/control_client.h"
#include "test/integration/daemon_fake_kubelet.h"
#include "test/integration/daemon_process.h"
#include "test/integration/device_health.h"
#include "test/integration/gpulet_runner.h"

namespace gpulet::testing {
namespace {

const absl::Duration kTimeout = absl::Seconds(10);

// GET /metrics over plain HTTP/1.0; empty on any failure.
std::string Scrape(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
    if (::write(fd, request.data(), request.size()) ==
        static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
    }
  }
  ::close(fd);
  return out;
}

int CountLines(const std::string& text, const std::string& pattern) {
  std::regex re(pattern);
  int n = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re);
       it != std::sregex_iterator(); ++it) {
    ++n;
  }
  return n;
}

// The devices whose gpulet_device_healthy sample is `value` ("0" or "1").
std::set<std::string> DevicesAt(const std::string& text,
                                const std::string& value) {
  std::regex re("gpulet_device_healthy\\{[^}]*device=\"([^\"]+)\"[^}]*\\} " +
                value + "\n");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re);
       it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

// What the first message of a new ListAndWatch stream advertises.
HealthById ListedHealth(const std::string& socket) {
  auto stub = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
      "unix://" + socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kTimeout));
  auto reader = stub->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  HealthById out;
  if (reader->Read(&response)) out = AdvertisedHealth(response);
  context.TryCancel();
  reader->Finish().ok();
  return out;
}

// Lists again until the socket advertises exactly `want`, or the timeout.
HealthById WaitForListedHealth(const std::string& socket,
                               const HealthById& want) {
  HealthById got = ListedHealth(socket);
  absl::Time deadline = absl::Now() + kTimeout;
  while (absl::Now() < deadline && got != want) {
    absl::SleepFor(absl::Milliseconds(20));
    got = ListedHealth(socket);
  }
  return got;
}

class DaemonConfiguredTest : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directory(dir_); }

  std::unique_ptr<DaemonProcess> Start(const std::string& machine,
                                       std::vector<std::string> args) {
    args.push_back("--kubelet-socket");
    args.push_back(kubelet_.socket_path());
    return std::make_unique<DaemonProcess>(
        machine, args, log_,
        std::vector<std::string>{"GPULET_SIM_SOCKET=" + sim_socket_});
  }

  TempDir tmp_;
  std::string dir_ = tmp_.path() + "/plugins";
  std::string log_ = tmp_.path() + "/gpulet.log";
  std::string sim_socket_ = tmp_.path() + "/sim.sock";
  FakeKubelet kubelet_{dir_};
};

TEST_F(DaemonConfiguredTest, MetricsShowRegistrationsDevicesAndXids) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("dgx-h100", {"--metrics-address=127.0.0.1:0"});
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  ASSERT_TRUE(plugin->WaitForLog("serving /metrics on 127.0.0.1:", kTimeout))
      << plugin->Log();
  std::smatch m;
  std::string log = plugin->Log();
  ASSERT_TRUE(std::regex_search(
      log, m, std::regex("serving /metrics on 127.0.0.1:(\\d+)")));
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(m[1].str(), &port));
  ASSERT_TRUE(plugin->WaitForLog("health monitor: watching", kTimeout));
  // The kubelet sees Register before the plugin counts it: wait for the
  // plugin's own log line, written after the counter.
  ASSERT_TRUE(plugin->WaitForLog("registered nvidia.com/gpu (", kTimeout))
      << plugin->Log();

  std::string text = Scrape(port);
  EXPECT_THAT(text, ::testing::HasSubstr("text/plain"));
  EXPECT_EQ(CountLines(text, "gpulet_device_healthy\\{[^}]*\\} 1\n"), 8)
      << text;
  EXPECT_EQ(
      CountLines(text,
                 "gpulet_registrations_total\\{[^}]*result=\"ok\"[^}]*\\} 1\n"),
      1)
      << text;

  ASSERT_TRUE(sim::SendControlCommand(sim_socket_, "xid 1 79").ok());
  // The gauge, the Xid counter and the transition counter are updated one
  // after the other: wait until every one has moved.
  const auto all_moved = [](const std::string& t) {
    return CountLines(t, "gpulet_device_healthy\\{[^}]*\\} 0\n") > 0 &&
           CountLines(t,
                      "gpulet_xid_events_total\\{[^}]*xid=\"79\"[^}]*\\} 1\n") >
               0 &&
           CountLines(t,
                      "gpulet_health_transitions_total\\{[^}]*direction="
                      "\"unhealthy\"[^}]*\\} 1\n") > 0;
  };
  absl::Time deadline = absl::Now() + kTimeout;
  while (absl::Now() < deadline && !all_moved(text)) {
    absl::SleepFor(absl::Milliseconds(20));
    text = Scrape(port);
  }
  // By device: GPU 1's (the profile's second GPU) went to 0, no other.
  const std::vector<std::string> gpus = ProfileGpuUuids("dgx-h100");
  ASSERT_EQ(gpus.size(), 8u);
  std::set<std::string> others(gpus.begin(), gpus.end());
  others.erase(gpus[1]);
  EXPECT_EQ(DevicesAt(text, "0"), std::set<std::string>{gpus[1]}) << text;
  EXPECT_EQ(DevicesAt(text, "1"), others) << text;
  EXPECT_EQ(
      CountLines(text, "gpulet_xid_events_total\\{[^}]*xid=\"79\"[^}]*\\} 1\n"),
      1)
      << text;
  EXPECT_EQ(CountLines(text,
                       "gpulet_health_transitions_total\\{[^}]*direction="
                       "\"unhealthy\"[^}]*\\} 1\n"),
            1)
      << text;
}

// Counters have samples from the start, at 0, as Prometheus users expect;
// reloads are counted by result and do not restart the plugin servers.
TEST_F(DaemonConfiguredTest, CountersStartAtZeroAndReloadsAreCounted) {
  const std::string config = tmp_.path() + "/config.yaml";
  std::ofstream(config) << "version: v1\n";
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start(
      "dgx-h100", {"--metrics-address=127.0.0.1:0", "--config-file", config});
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  ASSERT_TRUE(plugin->WaitForLog("serving /metrics on 127.0.0.1:", kTimeout));
  std::smatch m;
  std::string log = plugin->Log();
  ASSERT_TRUE(std::regex_search(
      log, m, std::regex("serving /metrics on 127.0.0.1:(\\d+)")));
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(m[1].str(), &port));
  std::string text = Scrape(port);
  for (const char* zero :
       {"gpulet_plugin_restarts_total\\{resource=\"nvidia.com/gpu\"\\} 0\n",
        "gpulet_kubelet_restarts_total 0\n",
        "gpulet_allocations_total\\{resource=\"nvidia.com/gpu\"\\} 0\n",
        "gpulet_config_reloads_total\\{result=\"ok\"\\} 0\n",
        "gpulet_config_reloads_total\\{result=\"error\"\\} 0\n"}) {
    EXPECT_EQ(CountLines(text, zero), 1) << zero << "\n" << text;
  }
  for (int reload = 1; reload <= 6; ++reload) {
    plugin->Signal(SIGHUP);
    ASSERT_TRUE(plugin->WaitForLog("configuration reloaded", kTimeout))
        << plugin->Log();
    absl::Time deadline = absl::Now() + kTimeout;
    const std::string want = absl::StrCat(
        "gpulet_config_reloads_total\\{result=\"ok\"\\} ", reload, "\n");
    while (absl::Now() < deadline && CountLines(text, want) == 0) {
      absl::SleepFor(absl::Milliseconds(10));
      text = Scrape(port);
    }
    ASSERT_EQ(CountLines(text, want), 1) << text;
  }
  EXPECT_EQ(
      CountLines(
          text,
          "gpulet_plugin_restarts_total\\{resource=\"nvidia.com/gpu\"\\} 0\n"),
      1)
      << text;
  std::ofstream(config) << "version: v2\n";
  plugin->Signal(SIGHUP);
  ASSERT_TRUE(plugin->WaitForLog("configuration not reloaded", kTimeout));
  absl::Time deadline = absl::Now() + kTimeout;
  while (absl::Now() < deadline &&
         CountLines(text,
                    "gpulet_config_reloads_total\\{result=\"error\"\\} 1\n") ==
             0) {
    absl::SleepFor(absl::Milliseconds(10));
    text = Scrape(port);
  }
  EXPECT_EQ(
      CountLines(text, "gpulet_config_reloads_total\\{result=\"error\"\\} 1\n"),
      1)
      << text;
  EXPECT_EQ(kubelet_.registration_count(), 1) << plugin->Log();
}

TEST_F(DaemonConfiguredTest, MigScopedXidMarksOnlyThatMigDevice) {
  const std::string config = tmp_.path() + "/config.yaml";
  std::ofstream(config) << "version: v1\nflags:\n  migStrategy: mixed\n";
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("a100-mig", {"--config-file", config});
  // gpu, mig-1g.5gb, mig-2g.10gb, mig-3g.20gb.
  ASSERT_TRUE(kubelet_.WaitForRegistrations(4, kTimeout)) << plugin->Log();
  ASSERT_TRUE(plugin->WaitForLog("health monitor: watching", kTimeout));
  const std::string small = dir_ + "/gpulet-mig-1g.5gb.sock";
  // From the profile: GPU 0's one 1g.5gb device and GPU 1's seven.
  const std::vector<std::string> all = ProfileMigUuids("a100-mig", "1g.5gb");
  const std::vector<std::string> on_gpu1 =
      ProfileMigUuids("a100-mig", "1g.5gb", 1);
  ASSERT_EQ(all.size(), 8u);
  ASSERT_EQ(on_gpu1.size(), 7u);
  const HealthById healthy = ExpectedHealth(all);
  ASSERT_EQ(HealthDiff(WaitForListedHealth(small, healthy), healthy), "");
  const HealthById gpu3 = ExpectedHealth({ProfileGpuUuids("a100-mig").at(3)});

  // GPU 1 carries seven 1g.5gb devices; GI 8 is the second of them.
  ASSERT_TRUE(sim::SendControlCommand(sim_socket_, "xid 1 48 8 0").ok());
  const HealthById one_down =
      ExpectedHealth(all, {"MIG-18c9dd1a-ba9e-5a60-9a3c-798e6dc65d58"});
  EXPECT_EQ(HealthDiff(WaitForListedHealth(small, one_down), one_down), "")
      << plugin->Log();
  EXPECT_EQ(HealthDiff(ListedHealth(dir_ + "/gpulet-gpu.sock"), gpu3), "");

  // A GPU-wide Xid on GPU 1 takes all seven, and only them.
  ASSERT_TRUE(sim::SendControlCommand(sim_socket_, "xid 1 79").ok());
  const HealthById gpu1_down = ExpectedHealth(all, on_gpu1);
  EXPECT_EQ(HealthDiff(WaitForListedHealth(small, gpu1_down), gpu1_down), "")
      << plugin->Log();
  EXPECT_EQ(HealthDiff(ListedHealth(dir_ + "/gpulet-gpu.sock"), gpu3), "");
}

// With a CDI strategy the plugin writes the spec its answers name, before it
// registers, and the names it hands out are devices of that spec: NVIDIA's
// plugin's kind and file (k8s.device-plugin.nvidia.com-gpu.json), beside a
// toolkit-style nvidia.com/gpu spec already on the node, which stays.
TEST_F(DaemonConfiguredTest, CdiStrategyWritesTheSpecItsAnswersName) {
  const std::string cdi_dir = tmp_.path() + "/cdi";
  std::filesystem::create_directories(cdi_dir);
  const std::string toolkit = "kind: nvidia.com/gpu\n";
  std::ofstream(cdi_dir + "/nvidia.com-gpu.yaml") << toolkit;
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start(
      "pcie-t4", {"--device-list-strategy=cdi-cri", "--cdi-spec-dir", cdi_dir});
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  std::ifstream in(cdi_dir + "/k8s.device-plugin.nvidia.com-gpu.json");
  ASSERT_TRUE(in.good()) << plugin->Log();
  const std::string spec((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  EXPECT_THAT(spec,
              ::testing::HasSubstr("\"k8s.device-plugin.nvidia.com/gpu\""));
  std::ifstream kept(cdi_dir + "/nvidia.com-gpu.yaml");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept),
                        std::istreambuf_iterator<char>()),
            toolkit);

  auto stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix://" + dir_ + "/gpulet-gpu.sock",
                          grpc::InsecureChannelCredentials()));
  grpc::ClientContext list_context;
  list_context.set_deadline(absl::ToChronoTime(absl::Now() + kTimeout));
  auto reader = stub->ListAndWatch(&list_context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse list;
  ASSERT_TRUE(reader->Read(&list));
  list_context.TryCancel();
  reader->Finish().ok();
  ASSERT_EQ(list.devices_size(), 4);

  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids(list.devices(2).id());
  v1beta1::AllocateResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub->Allocate(&context, request, &response).ok());
  ASSERT_EQ(response.container_responses(0).cdi_devices_size(), 1);
  const std::string name =
      response.container_responses(0).cdi_devices(0).name();
  EXPECT_EQ(name, "k8s.device-plugin.nvidia.com/gpu=" + list.devices(2).id());
  EXPECT_THAT(spec, ::testing::HasSubstr("\"" + list.devices(2).id() + "\""));
  EXPECT_TRUE(response.container_responses(0).envs().empty());
}

}  // namespace
}  // namespace gpulet::testing
