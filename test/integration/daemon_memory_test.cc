// Memory shares end to end: `gpulet plugin` on the simulator's four T4s
// with sharing.memory, a fake kubelet (registration, PodResources) and a
// fake API server over HTTPS on 127.0.0.1 holding the Node and its
// memory-share annotations.
#include <signal.h>

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

namespace gpulet::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr absl::Duration kTimeout = absl::Seconds(30);
constexpr char kMemorySocket[] = "gpulet-gpu-memory.sock";
// pcie-t4's first two GPUs; 15360 MiB each, 7 units of 2 GiB.
constexpr char kGpu0[] = "GPU-5fdf10a6-0287-5e63-be17-239c7682b518";
constexpr char kGpu1[] = "GPU-ac5ac60b-e97f-5810-9a76-8ed7fbe42021";

std::string Unit(const std::string& gpu, int k) {
  return absl::StrCat(gpu, "::m", k);
}

// An API server that knows one Node (n1) and answers what the node agent
// asks: the Node (GET, PATCH with a resourceVersion check), pods by name,
// and a pod list/watch that stays open until the server stops.
class FakeApiServer {
 public:
  FakeApiServer() {
    ca_ = kube::tls_test::MakeCa("test-ca");
    kube::tls_test::KeyPair leaf =
        kube::tls_test::MakeLeaf(ca_, "apiserver", /*server=*/true);
    server_ = std::make_unique<httplib::SSLServer>(
        kube::tls_test::ReadCert(leaf.cert_pem).get(),
        kube::tls_test::ReadKey(leaf.key_pem).get());
    Routes();
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
  }
  ~FakeApiServer() {
    {
      std::lock_guard lock(watch_mu_);
      stopping_ = true;
    }
    watch_cv_.notify_all();
    server_->stop();
    thread_.join();
  }

  bool ok() const { return port_ > 0; }

  std::string Kubeconfig() const {
    return absl::StrCat(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
        "    server: https://127.0.0.1:",
        port_,
        "\n    certificate-authority-data: ", absl::Base64Escape(ca_.cert_pem),
        "\nusers:\n- name: u\n  user:\n    token: test-token\ncontexts:\n"
        "- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n");
  }

  void SetPending(const std::string& value) {
    absl::MutexLock lock(&mu_);
    annotations_[std::string(sharing::kPendingAnnotation)] = value;
    ++version_;
  }
  void AddPod(const std::string& name, const std::string& uid) {
    absl::MutexLock lock(&mu_);
    pods_[name] = uid;
  }
  // The node annotation, once `pred` holds for it.
  std::optional<sharing::NodeMemory> WaitForNode(
      const std::function<bool(const sharing::NodeMemory&)>& pred) {
    absl::MutexLock lock(&mu_);
    std::optional<sharing::NodeMemory> found;
    auto check = [&]() {
      mu_.AssertHeld();
      auto it = annotations_.find(std::string(sharing::kNodeAnnotation));
      if (it == annotations_.end()) return false;
      absl::StatusOr<sharing::NodeMemory> node =
          sharing::ParseNodeMemory(it->second);
      if (!node.ok() || !pred(*node)) return false;
      found = *node;
      return true;
    };
    mu_.AwaitWithTimeout(absl::Condition(&check), kTimeout);
    return found;
  }
  // Waits until the annotation `key` satisfies `pred`.
  bool WaitForAnnotation(std::string_view key,
                         const std::function<bool(const std::string&)>& pred) {
    absl::MutexLock lock(&mu_);
    auto check = [&]() {
      mu_.AssertHeld();
      auto it = annotations_.find(std::string(key));
      return pred(it == annotations_.end() ? "" : it->second);
    };
    return mu_.AwaitWithTimeout(absl::Condition(&check), kTimeout);
  }
  std::string Annotation(std::string_view key) {
    absl::MutexLock lock(&mu_);
    auto it = annotations_.find(std::string(key));
    return it == annotations_.end() ? "" : it->second;
  }

 private:
  Json NodeObject() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Json node = {
        {"kind", "Node"},
        {"apiVersion", "v1"},
        {"metadata",
         {{"name", "n1"}, {"resourceVersion", std::to_string(version_)}}}};
    for (const auto& [k, v] : annotations_) {
      node["metadata"]["annotations"][k] = v;
    }
    return node;
  }

  void Routes() {
    server_->Get("/api/v1/nodes/n1",
                 [this](const httplib::Request&, httplib::Response& res) {
                   absl::MutexLock lock(&mu_);
                   res.set_content(NodeObject().dump(), "application/json");
                 });
    server_->Patch("/api/v1/nodes/n1", [this](const httplib::Request& req,
                                              httplib::Response& res) {
      Json patch = Json::parse(req.body, nullptr, false);
      absl::MutexLock lock(&mu_);
      if (patch.is_discarded() ||
          patch["metadata"]["resourceVersion"] != std::to_string(version_)) {
        res.status = 409;
        res.set_content(
            R"({"kind":"Status","reason":"Conflict","code":409,"message":"the object has been modified"})",
            "application/json");
        return;
      }
      for (const auto& [k, v] : patch["metadata"]["annotations"].items()) {
        if (v.is_null()) {
          annotations_.erase(k);
        } else {
          annotations_[k] = v.get<std::string>();
        }
      }
      ++version_;
      res.set_content(NodeObject().dump(), "application/json");
    });
    server_->Get(R"(/api/v1/namespaces/ns/pods/([a-z0-9-]+))",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   absl::MutexLock lock(&mu_);
                   auto it = pods_.find(req.matches[1].str());
                   if (it == pods_.end()) {
                     res.status = 404;
                     res.set_content(
                         R"({"kind":"Status","reason":"NotFound","code":404})",
                         "application/json");
                     return;
                   }
                   res.set_content(Json{{"metadata", {{"uid", it->second}}},
                                        {"spec", {{"nodeName", "n1"}}},
                                        {"status", {{"phase", "Pending"}}}}
                                       .dump(),
                                   "application/json");
                 });
    server_->Get("/api/v1/pods", [this](const httplib::Request& req,
                                        httplib::Response& res) {
      if (!req.has_param("watch")) {
        // ns/x, whose uid PodResources does not tell.
        res.set_content(
            R"({"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[)"
            R"({"metadata":{"namespace":"ns","name":"x","uid":"u-x"}}]})",
            "application/json");
        return;
      }
      // Open until the server stops, as a quiet watch is.
      res.set_chunked_content_provider(
          "application/json", [this](size_t, httplib::DataSink& sink) {
            std::unique_lock lock(watch_mu_);
            watch_cv_.wait(lock, [this] { return stopping_; });
            sink.done();
            return true;
          });
    });
  }

  kube::tls_test::KeyPair ca_;
  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = -1;
  std::thread thread_;
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool stopping_ = false;
  absl::Mutex mu_;
  int version_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, std::string> annotations_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> pods_ ABSL_GUARDED_BY(mu_);
};

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
