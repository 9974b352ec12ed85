// Per-node configuration end to end (docs/configuration.md, "One
// configuration per node"): `gpulet plugin --config-dir` on the simulated
// dgx-h100, the fake kubelet, and a real kube-apiserver holding its Node:
// the Node's nvidia.com/device-plugin.config label picks the file, a change
// of the label is a reload in place (same process, same registration, the
// stream the kubelet holds stays open), and the Node's annotations say
// which configuration is in force and why another one is not.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/model/testing/test_root.h"
#include "src/net/kube/client.h"
#include "src/net/kube/tls_transport.h"
#include "test/integration/apiserver_host.h"
#include "test/integration/daemon_fake_kubelet.h"
#include "test/integration/daemon_process.h"
#include "test/integration/device_health.h"
#include "test/integration/plugin_watch.h"

namespace gpulet::testing {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(30);
constexpr char kNode[] = "/api/v1/nodes/n1";
constexpr char kLabel[] = "nvidia.com/device-plugin.config";
constexpr char kInForce[] = "gpulet.dev/device-plugin-config";
constexpr char kError[] = "gpulet.dev/device-plugin-config-error";

std::string TimeSlicing(int replicas) {
  return absl::StrCat(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: ",
      replicas, "\n");
}

// Every whole GPU of dgx-h100, or each one's `replicas` replicas.
HealthById Devices(int replicas) {
  std::vector<std::string> ids;
  for (const std::string& uuid : ProfileGpuUuids("dgx-h100")) {
    if (replicas == 1) ids.push_back(uuid);
    for (int n = 0; replicas > 1 && n < replicas; ++n) {
      ids.push_back(absl::StrCat(uuid, "::", n));
    }
  }
  return ExpectedHealth(ids);
}

class DaemonNodeConfigTest : public ApiServerSuite {
 protected:
  void SetUp() override {
    ApiServerSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    admin_.client->Delete(kNode).IgnoreError();  // the previous test's
    absl::StatusOr<Json> made = admin_.client->Create(
        "/api/v1/nodes", {{"apiVersion", "v1"},
                          {"kind", "Node"},
                          {"metadata", {{"name", "n1"}}}});
    ASSERT_TRUE(made.ok()) << made.status();
    std::filesystem::create_directories(plugins_);
    std::filesystem::create_directories(configs_);
    std::ofstream(configs_ + "/default") << "version: v1\n";
    std::ofstream(configs_ + "/ts") << TimeSlicing(4);
    const config::ApiServerConfig api = host_->AdminConfig();
    std::ofstream(kubeconfig_)
        << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
        << "    server: " << api.server << "\n"
        << "    certificate-authority-data: " << absl::Base64Escape(api.ca_pem)
        << "\nusers:\n- name: u\n  user:\n    token: " << api.token
        << "\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
        << "current-context: x\n";
    ASSERT_TRUE(kubelet_.Start());
  }

  std::unique_ptr<DaemonProcess> Start(std::vector<std::string> args = {}) {
    std::vector<std::string> all = {"--config-dir", configs_,
                                    "--kubelet-socket", kubelet_.socket_path()};
    all.insert(all.end(), args.begin(), args.end());
    return std::make_unique<DaemonProcess>(
        "dgx-h100", all, log_,
        std::vector<std::string>{"NODE_NAME=n1", "KUBECONFIG=" + kubeconfig_});
  }

  void SetLabel(const std::string& value) {
    Json labels;
    labels[kLabel] = value.empty() ? Json(nullptr) : Json(value);
    absl::StatusOr<Json> patched =
        admin_.client->MergePatch(kNode, {{"metadata", {{"labels", labels}}}});
    ASSERT_TRUE(patched.ok()) << patched.status();
  }

  // Polls the Node until its annotation `key` satisfies `pred`.
  bool WaitAnnotation(const std::string& key,
                      const std::function<bool(const std::string&)>& pred) {
    const absl::Time deadline = absl::Now() + kTimeout;
    while (absl::Now() < deadline) {
      absl::StatusOr<Json> node = admin_.client->Get(kNode);
      if (node.ok()) {
        const Json& a = (*node)["metadata"].value("annotations", Json{});
        const std::string value =
            a.is_object() && a.contains(key) ? a[key].get<std::string>() : "";
        if (pred(value)) return true;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }

  std::string Socket() const { return plugins_ + "/gpulet-gpu.sock"; }

  cdi::testing::TempRoot tmp_;
  std::string plugins_ = tmp_.path() + "/plugins";
  std::string configs_ = tmp_.path() + "/configs";
  std::string kubeconfig_ = tmp_.path() + "/kubeconfig";
  std::string log_ = tmp_.path() + "/gpulet.log";
  FakeKubelet kubelet_{plugins_};
};

auto Is(const std::string& want) {
  return [want](const std::string& v) { return v == want; };
}

TEST_F(DaemonNodeConfigTest, TheLabelPicksTheConfigurationAndIsFollowed) {
  auto plugin = Start();
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  Watch watch(Socket());
  // No label, no --default-config: the `named` fallback, "default".
  ASSERT_TRUE(watch.WaitForHealth(Devices(1))) << watch.Describe(Devices(1));
  ASSERT_TRUE(WaitAnnotation(kInForce, Is("default"))) << plugin->Log();

  SetLabel("ts");
  ASSERT_TRUE(watch.WaitForHealth(Devices(4)))
      << watch.Describe(Devices(4)) << plugin->Log();
  EXPECT_TRUE(WaitAnnotation(kInForce, Is("ts"))) << plugin->Log();
  EXPECT_TRUE(WaitAnnotation(kError, Is("")));
  EXPECT_FALSE(watch.ended()) << "a label change must reload in place";
  EXPECT_EQ(kubelet_.registration_count(), 1);
  EXPECT_TRUE(plugin->Running());

  // A label naming no configuration: the one in force stays, and says why.
  SetLabel("missing");
  EXPECT_TRUE(WaitAnnotation(kError, [](const std::string& v) {
    return absl::StrContains(v, "device-plugin.config=missing");
  })) << plugin->Log();
  EXPECT_TRUE(WaitAnnotation(kInForce, Is("ts")));
  EXPECT_EQ(AdvertisedHealth(watch.latest()), Devices(4));

  // The label removed: the fallback again, the error gone.
  SetLabel("");
  ASSERT_TRUE(watch.WaitForHealth(Devices(1))) << watch.Describe(Devices(1));
  EXPECT_TRUE(WaitAnnotation(kInForce, Is("default"))) << plugin->Log();
  EXPECT_TRUE(WaitAnnotation(kError, Is("")));
  EXPECT_FALSE(watch.ended());
  EXPECT_EQ(kubelet_.registration_count(), 1);
}

TEST_F(DaemonNodeConfigTest, StartsWithTheConfigurationTheLabelNames) {
  SetLabel("ts");
  auto plugin = Start({"--default-config", "default"});
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  Watch watch(Socket());
  ASSERT_TRUE(watch.WaitForHealth(Devices(4))) << watch.Describe(Devices(4));
  EXPECT_TRUE(WaitAnnotation(kInForce, Is("ts"))) << plugin->Log();
  // A SIGHUP re-reads the file in force: now 2 replicas.
  std::ofstream(configs_ + "/ts") << TimeSlicing(2);
  plugin->Signal(SIGHUP);
  ASSERT_TRUE(watch.WaitForHealth(Devices(2))) << watch.Describe(Devices(2));
}

TEST_F(DaemonNodeConfigTest, ALabelNamingNoConfigurationStopsTheStart) {
  SetLabel("missing");
  auto plugin = Start();
  std::optional<int> code = plugin->WaitExit(kTimeout);
  ASSERT_TRUE(code.has_value()) << plugin->Log();
  EXPECT_EQ(*code, 1);
  EXPECT_THAT(plugin->Log(),
              HasSubstr("nvidia.com/device-plugin.config=missing, which names "
                        "no configuration"));
  EXPECT_EQ(kubelet_.registration_count(), 0);
}

TEST_F(DaemonNodeConfigTest, ConfigDirAndConfigFileAreRefusedTogether) {
  auto plugin = Start({"--config-file", configs_ + "/ts"});
  std::optional<int> code = plugin->WaitExit(kTimeout);
  ASSERT_TRUE(code.has_value()) << plugin->Log();
  EXPECT_EQ(*code, 2);
  EXPECT_THAT(plugin->Log(), HasSubstr("--config-dir and --config-file"));
}

}  // namespace
}  // namespace gpulet::testing
