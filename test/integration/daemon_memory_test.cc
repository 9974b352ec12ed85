// Memory shares end to end: `gpulet plugin` on the simulator's four T4s
// with sharing.memory, a fake kubelet (registration, PodResources) and a
// fake API server over HTTPS on 127.0.0.1 holding the Node and its
// memory-share annotations.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "src/model/sharing/annotations.h"
#include "src/net/testing/fake_kubelet.h"
#include "src/net/testing/test_tls.h"
#include "test/integration/daemon_fake_kubelet.h"
#include "test/integration/daemon_process.h"
#include "test/integration/gpulet_runner.h"
#include "test/integration/memory_api_server.h"

namespace gpulet::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr char kMemorySocket[] = "gpulet-gpu-memory.sock";
// pcie-t4's first two GPUs; 15360 MiB each, 7 units of 2 GiB.
constexpr char kGpu0[] = "GPU-5fdf10a6-0287-5e63-be17-239c7682b518";
constexpr char kGpu1[] = "GPU-ac5ac60b-e97f-5810-9a76-8ed7fbe42021";

std::string Unit(const std::string& gpu, int k) {
  return absl::StrCat(gpu, "::m", k);
}

std::unique_ptr<v1beta1::DevicePlugin::Stub> Dial(const std::string& path) {
  return v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
      "unix://" + path, grpc::InsecureChannelCredentials()));
}

class DaemonMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    std::filesystem::create_directory(dir_);
    ASSERT_TRUE(api_.ok());
    ASSERT_FALSE(pod_resources_.socket_path().empty());
    std::ofstream(kubeconfig_) << api_.Kubeconfig();
  }

  std::unique_ptr<DaemonProcess> Start(const std::string& config,
                                       bool with_api = true) {
    std::ofstream(config_) << config;
    std::vector<std::string> env = {"GPULET_POD_RESOURCES_SOCKET=" +
                                    pod_resources_.socket_path()};
    if (with_api) {
      env.push_back("NODE_NAME=n1");
      env.push_back("KUBECONFIG=" + kubeconfig_);
    }
    return std::make_unique<DaemonProcess>(
        "pcie-t4",
        std::vector<std::string>{"--config-file", config_, "--kubelet-socket",
                                 kubelet_.socket_path()},
        log_, env);
  }

  std::string MemorySocket() const { return dir_ + "/" + kMemorySocket; }

  // The kubelet holds units 0-2 of GPU 0 and unit 0 of GPU 1 for ns/x.
  void HoldUnits() {
    v1::ListPodResourcesResponse list;
    v1::PodResources* pod = list.add_pod_resources();
    pod->set_namespace_("ns");
    pod->set_name("x");
    v1::ContainerResources* c = pod->add_containers();
    c->set_name("c");
    v1::ContainerDevices* d = c->add_devices();
    d->set_resource_name("nvidia.com/gpu-memory");
    for (int k = 0; k < 3; ++k) d->add_device_ids(Unit(kGpu0, k));
    v1::ContainerResources* c2 = pod->add_containers();
    c2->set_name("d");
    v1::ContainerDevices* d2 = c2->add_devices();
    d2->set_resource_name("nvidia.com/gpu-memory");
    d2->add_device_ids(Unit(kGpu1, 0));
    v1::AllocatableResourcesResponse allocatable;
    v1::ContainerDevices* a = allocatable.add_devices();
    a->set_resource_name("nvidia.com/gpu-memory");
    for (const char* gpu : {kGpu0, kGpu1}) {
      for (int k = 0; k < 7; ++k) a->add_device_ids(Unit(gpu, k));
    }
    pod_resources_.Set(list, allocatable);
  }

  TempDir tmp_;
  std::string dir_ = tmp_.path() + "/plugins";
  std::string log_ = tmp_.path() + "/gpulet.log";
  std::string config_ = tmp_.path() + "/config.yaml";
  std::string kubeconfig_ = tmp_.path() + "/kubeconfig";
  FakeKubelet kubelet_{dir_};
  podresources::FakeKubelet pod_resources_;
  FakeApiServer api_;
};

constexpr char kConfig[] =
    "version: v1\nsharing:\n  memory:\n    unit: 2GiB\n    devices: [0, 1]\n";

TEST_F(DaemonMemoryTest, AdvertisesUnitsPublishesAndKeepsPendingPodsFitting) {
  HoldUnits();
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start(kConfig);
  ASSERT_TRUE(kubelet_.WaitForRegistrations(2, kTimeout)) << plugin->Log();
  std::vector<std::string> names;
  for (const auto& r : kubelet_.registrations()) {
    names.push_back(r.resource_name());
  }
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("nvidia.com/gpu",
                                                     "nvidia.com/gpu-memory"));

  // The node annotation: 7 units per GPU, the kubelet's holdings as used,
  // the pod's uid from the watch of the node's pods.
  std::optional<sharing::NodeMemory> node =
      api_.WaitForNode([](const sharing::NodeMemory& n) {
        return n.gpus.size() == 2 && n.gpus[0].used == 3 &&
               n.gpus[1].used == 1 && n.pods.size() == 1 &&
               n.pods[0].uid == "u-x";
      });
  ASSERT_TRUE(node.has_value())
      << api_.Annotation(sharing::kNodeAnnotation) << "\n--- plugin log\n"
      << plugin->Log();
  EXPECT_EQ(node->resource, "nvidia.com/gpu-memory");
  EXPECT_EQ(node->unit_mib, 2048);
  EXPECT_EQ(node->gpus[0].uuid, kGpu0);
  EXPECT_EQ(node->gpus[0].units, 7);
  ASSERT_EQ(node->pods.size(), 1u);
  EXPECT_EQ(node->pods[0].name, "x");

  // Bound after that sync: a (2 units, being admitted), b and c (4 each).
  // Binpack alone would give a the fuller GPU 0 (4 free) and leave no room
  // for both 4s; the plugin re-reads the Node (no pending 2 in its view)
  // and picks GPU 1.
  api_.AddPod("b", "u-b");
  api_.AddPod("c", "u-c");
  const std::string now =
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  api_.SetPending(
      absl::StrCat(R"({"v":1,"pods":[)",
                   R"({"uid":"u-a","namespace":"ns","name":"a","time":")", now,
                   R"(","containers":[{"name":"c","units":2}]},)",
                   R"({"uid":"u-b","namespace":"ns","name":"b","time":")", now,
                   R"(","containers":[{"name":"c","units":4}]},)",
                   R"({"uid":"u-c","namespace":"ns","name":"c","time":")", now,
                   R"(","containers":[{"name":"c","units":4}]}]})"));
  v1beta1::PreferredAllocationRequest preferred;
  auto* req = preferred.add_container_requests();
  for (int k = 3; k < 7; ++k) req->add_available_deviceids(Unit(kGpu0, k));
  for (int k = 1; k < 7; ++k) req->add_available_deviceids(Unit(kGpu1, k));
  req->set_allocation_size(2);
  v1beta1::PreferredAllocationResponse answer;
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kTimeout));
    ASSERT_TRUE(Dial(MemorySocket())
                    ->GetPreferredAllocation(&context, preferred, &answer)
                    .ok());
  }
  ASSERT_EQ(answer.container_responses_size(), 1);
  EXPECT_THAT(answer.container_responses(0).deviceids(),
              ElementsAre(Unit(kGpu1, 1), Unit(kGpu1, 2)));

  // Allocate: the container's limit, and the answer counts on GPU 1 before
  // the kubelet lists it.
  v1beta1::AllocateRequest allocate;
  auto* units = allocate.add_container_requests();
  units->add_devices_ids(Unit(kGpu1, 1));
  units->add_devices_ids(Unit(kGpu1, 2));
  v1beta1::AllocateResponse allocated;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(
        Dial(MemorySocket())->Allocate(&context, allocate, &allocated).ok());
  }
  EXPECT_EQ(
      allocated.container_responses(0).envs().at("GPULET_GPU_MEMORY_LIMIT"),
      "4096");
  EXPECT_EQ(
      allocated.container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"),
      kGpu1);
  node = api_.WaitForNode([](const sharing::NodeMemory& n) {
    return n.gpus.size() == 2 && n.gpus[1].used == 3;
  });
  ASSERT_TRUE(node.has_value()) << api_.Annotation(sharing::kNodeAnnotation);
  // a is gone from the API server (never added): the next sync prunes it
  // (the placement may be written before); b and c wait.
  EXPECT_TRUE(api_.WaitForAnnotation(sharing::kPendingAnnotation,
                                     [](const std::string& text) {
                                       return !absl::StrContains(
                                           text, "\"name\":\"a\"");
                                     }))
      << api_.Annotation(sharing::kPendingAnnotation);
  EXPECT_THAT(api_.Annotation(sharing::kPendingAnnotation),
              ::testing::AllOf(HasSubstr("\"name\":\"b\""),
                               HasSubstr("\"name\":\"c\"")));

  // Units of two GPUs for one container are refused, naming them.
  v1beta1::AllocateRequest spanning;
  auto* both = spanning.add_container_requests();
  both->add_devices_ids(Unit(kGpu0, 3));
  both->add_devices_ids(Unit(kGpu1, 3));
  v1beta1::AllocateResponse refused;
  grpc::ClientContext context;
  grpc::Status status =
      Dial(MemorySocket())->Allocate(&context, spanning, &refused);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr(absl::StrCat("span GPUs ", kGpu0, ", ", kGpu1)));

  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

// The API server stops answering: GetPreferredAllocation and Allocate of
// the memory units fail with an error naming the node and what they waited
// for, before their deadline; meanwhile the memory socket's other calls
// and streams and the other resource's socket are served.
TEST_F(DaemonMemoryTest, AnApiServerThatDoesNotAnswerHoldsUpNothingElse) {
  HoldUnits();
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start(kConfig);
  ASSERT_TRUE(kubelet_.WaitForRegistrations(2, kTimeout)) << plugin->Log();
  ASSERT_TRUE(api_.WaitForNode([](const sharing::NodeMemory& n) {
                    return n.gpus.size() == 2 && n.pods.size() == 1;
                  })
                  .has_value())
      << plugin->Log();
  api_.Hold();

  auto memory = Dial(MemorySocket());
  grpc::Status allocated;
  std::jthread call([&] {
    v1beta1::AllocateRequest request;
    request.add_container_requests()->add_devices_ids(Unit(kGpu1, 4));
    v1beta1::AllocateResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(6)));
    allocated = memory->Allocate(&context, request, &response);
  });
  // The placement write's read of the Node is held.
  ASSERT_TRUE(api_.WaitHeld(1)) << plugin->Log();
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kTimeout));
    auto stream = memory->ListAndWatch(&context, v1beta1::Empty());
    v1beta1::ListAndWatchResponse list;
    ASSERT_TRUE(stream->Read(&list));
    EXPECT_EQ(list.devices_size(), 14);
    context.TryCancel();
  }
  {
    auto gpus = Dial(dir_ + "/gpulet-gpu.sock");
    grpc::ClientContext watch;
    watch.set_deadline(absl::ToChronoTime(absl::Now() + kTimeout));
    auto stream = gpus->ListAndWatch(&watch, v1beta1::Empty());
    v1beta1::ListAndWatchResponse list;
    ASSERT_TRUE(stream->Read(&list));
    ASSERT_GT(list.devices_size(), 0);
    watch.TryCancel();
    v1beta1::AllocateRequest request;
    request.add_container_requests()->add_devices_ids(list.devices(0).id());
    v1beta1::AllocateResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kTimeout));
    EXPECT_TRUE(gpus->Allocate(&context, request, &response).ok());
  }
  call.join();
  EXPECT_EQ(allocated.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(allocated.error_message(),
              HasSubstr(absl::StrCat("node n1: the Allocate of 1 unit(s) of ",
                                     kGpu1, " was not recorded")));

  v1beta1::PreferredAllocationRequest preferred;
  auto* req = preferred.add_container_requests();
  for (int k = 3; k < 7; ++k) req->add_available_deviceids(Unit(kGpu0, k));
  req->set_allocation_size(1);
  v1beta1::PreferredAllocationResponse answer;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(6)));
  grpc::Status chosen =
      memory->GetPreferredAllocation(&context, preferred, &answer);
  EXPECT_EQ(chosen.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(chosen.error_message(),
              HasSubstr("node n1: the pending memory requests"));
  api_.Release();
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

// GET /metrics from 127.0.0.1:port; empty on any failure.
std::string ScrapeMetrics(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (fd >= 0 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
    if (::write(fd, request.data(), request.size()) ==
        static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
    }
  }
  if (fd >= 0) ::close(fd);
  return out;
}

// The node agent's API requests are on the process's /metrics, as
// client-go names them, by code, method and the API server's host:port.
TEST_F(DaemonMemoryTest, ApiRequestsAreOnTheMetricsEndpoint) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin =
      Start(absl::StrCat(kConfig, "metrics:\n  address: \"127.0.0.1:0\"\n"));
  ASSERT_TRUE(plugin->WaitForLog("serving /metrics on 127.0.0.1:", kTimeout))
      << plugin->Log();
  const std::string log = plugin->Log();
  const size_t at = log.find("serving /metrics on 127.0.0.1:");
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(
      log.substr(at + 30,
                 log.find_first_not_of("0123456789", at + 30) - (at + 30)),
      &port))
      << log;
  ASSERT_TRUE(api_.WaitForNode([](const sharing::NodeMemory& n) {
                    return n.gpus.size() == 2;
                  })
                  .has_value())
      << plugin->Log();
  const std::string host = absl::StrCat("host=\"127.0.0.1:", api_.port(), "\"");
  const std::string get = absl::StrCat(
      "rest_client_requests_total{code=\"200\",method=\"GET\",", host, "}");
  const std::string patch = absl::StrCat(
      "rest_client_requests_total{code=\"200\",method=\"PATCH\",", host, "}");
  const std::string patch_latency = absl::StrCat(
      "rest_client_request_duration_seconds_bucket{verb=\"PATCH\",", host,
      ",le=\"+Inf\"}");
  // The PATCH is counted when its answer's headers reach the agent and
  // timed when its whole answer has: wait for both.
  std::string text;
  const absl::Time until = absl::Now() + kTimeout;
  while (absl::Now() < until) {
    text = ScrapeMetrics(port);
    if (absl::StrContains(text, get) && absl::StrContains(text, patch) &&
        absl::StrContains(text, patch_latency)) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_THAT(text, HasSubstr(get));
  EXPECT_THAT(text, HasSubstr(patch));
  EXPECT_THAT(text, HasSubstr(patch_latency));
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

TEST_F(DaemonMemoryTest, WithoutApiAccessServesUnitsAndSaysSo) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start(kConfig, /*with_api=*/false);
  ASSERT_TRUE(kubelet_.WaitForRegistrations(2, kTimeout)) << plugin->Log();
  EXPECT_TRUE(
      plugin->WaitForLog("memory shares: NODE_NAME is not set", kTimeout))
      << plugin->Log();
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

TEST_F(DaemonMemoryTest, TooManyUnitsIsAClearStartupError) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start(
      "version: v1\nsharing:\n  memory:\n    unit: MiB\n"
      "    maxDevicesPerNode: 4096\n",
      /*with_api=*/false);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 1) << plugin->Log();
  EXPECT_THAT(plugin->Log(),
              HasSubstr("sharing.memory.maxDevicesPerNode: the selected GPUs "
                        "make 61440 memory units (1 MiB each), more than "
                        "maxDevicesPerNode (4096)"));
}

}  // namespace
}  // namespace gpulet::testing
