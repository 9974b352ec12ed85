// deploy/dra/webhook.yaml's admission webhook against a real kube-apiserver:
// its rules and match conditions as shipped, its clientConfig pointed at
// `gpulet dra webhook`'s handler served here over HTTPS on 127.0.0.1, and
// its scope narrowed to a namespace of the test's own. A claim or template
// whose gpu.nvidia.com configuration `gpulet dra` would refuse at prepare
// is refused at creation with the field named; NVIDIA's published example
// and other drivers' configurations are created.
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/clock.h"
#include "src/base/common/file_util.h"
#include "src/base/config/yaml_json.h"
#include "src/dra/webhook/admission.h"
#include "src/net/http/server.h"
#include "src/net/kube/client.h"
#include "test/integration/apiserver_host.h"

namespace gpulet::dra {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

constexpr char kNamespace[] = "webhook-test";
constexpr char kWebhooks[] =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

std::string Claims() {
  return absl::StrCat("/apis/resource.k8s.io/v1/namespaces/", kNamespace,
                      "/resourceclaims");
}

std::string Templates() {
  return absl::StrCat("/apis/resource.k8s.io/v1/namespaces/", kNamespace,
                      "/resourceclaimtemplates");
}

// NVIDIA's MPS example (NVIDIA/k8s-dra-driver-gpu, Apache-2.0,
// demo/specs/quickstart/v1/gpu-test-mps.yaml) as a claim, its
// defaultPinnedDeviceMemoryLimit replaced by `limit`.
Json MpsClaim(const std::string& name, const std::string& limit) {
  Json claim = Json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "spec": {"devices": {
      "requests": [{"name": "mps-gpu",
                    "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
      "config": [{"requests": ["mps-gpu"], "opaque": {
        "driver": "gpu.nvidia.com",
        "parameters": {"apiVersion": "resource.nvidia.com/v1beta1",
                       "kind": "GpuConfig",
                       "sharing": {"strategy": "MPS", "mpsConfig": {
                         "defaultActiveThreadPercentage": 50}}}}}]}}})");
  claim["metadata"] = {{"name", name}};
  claim["spec"]["devices"]["config"][0]["opaque"]["parameters"]["sharing"]
       ["mpsConfig"]["defaultPinnedDeviceMemoryLimit"] = limit;
  return claim;
}

Json Template(const std::string& name, Json claim) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaimTemplate"},
          {"metadata", {{"name", name}}},
          {"spec", {{"spec", claim["spec"]}}}};
}

class DraWebhookApiServerTest : public gpulet::testing::ApiServerSuite {
 protected:
  // The handler over HTTPS on 127.0.0.1, with a CA of its own.
  void ServeWebhook() {
    ca_ = kube::tls_test::MakeCa("webhook-ca");
    const kube::tls_test::KeyPair leaf =
        kube::tls_test::MakeLeaf(ca_, "webhook", true);
    const std::string dir = host_->dir();
    ASSERT_TRUE(common::WriteFileAtomic(dir + "/webhook.crt", leaf.cert_pem,
                                        {.mode = 0600, .durable = false})
                    .ok());
    ASSERT_TRUE(common::WriteFileAtomic(dir + "/webhook.key", leaf.key_pem,
                                        {.mode = 0600, .durable = false})
                    .ok());
    http::ServerOptions options;
    options.address = "127.0.0.1:0";
    options.tls_cert_file = dir + "/webhook.crt";
    options.tls_key_file = dir + "/webhook.key";
    options.name = "dra-webhook";
    absl::StatusOr<std::unique_ptr<http::Server>> server =
        http::Server::Start(options, WebhookHandler("gpu.nvidia.com"));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  // deploy/dra/webhook.yaml's ValidatingWebhookConfiguration, calling the
  // handler served here, for kNamespace only.
  Json ShippedWebhookHere() {
    absl::StatusOr<std::string> text = common::ReadFile(
        std::string(GPULET_SOURCE_DIR) + "/deploy/dra/webhook.yaml");
    EXPECT_TRUE(text.ok()) << text.status();
    for (absl::string_view doc : absl::StrSplit(*text, "\n---\n")) {
      absl::StatusOr<nlohmann::ordered_json> object =
          config::YamlToJson(doc, "deploy/dra/webhook.yaml");
      if (!object.ok() || !object->is_object() ||
          object->value("kind", "") != "ValidatingWebhookConfiguration") {
        continue;
      }
      Json config = Json::parse(object->dump());
      Json& hook = config["webhooks"][0];
      hook["clientConfig"] = {
          {"url",
           absl::StrCat("https://127.0.0.1:", server_->port(), kWebhookPath)},
          {"caBundle", absl::Base64Escape(ca_.cert_pem)}};
      hook["namespaceSelector"] = {
          {"matchLabels", {{"kubernetes.io/metadata.name", kNamespace}}}};
      return config;
    }
    ADD_FAILURE() << "no ValidatingWebhookConfiguration in webhook.yaml";
    return Json();
  }

  kube::tls_test::KeyPair ca_;
  std::unique_ptr<http::Server> server_;
};

TEST_F(DraWebhookApiServerTest, ABadClaimConfigIsRefusedAtCreation) {
  ServeWebhook();
  ASSERT_TRUE(
      admin_.client
          ->Create("/api/v1/namespaces", {{"apiVersion", "v1"},
                                          {"kind", "Namespace"},
                                          {"metadata", {{"name", kNamespace}}}})
          .ok());
  const Json webhook = ShippedWebhookHere();
  absl::StatusOr<Json> made = admin_.client->Create(kWebhooks, webhook);
  ASSERT_TRUE(made.ok()) << made.status();

  // The API server takes a new webhook up from its watch: until then a
  // bad claim is stored, and deleted again here.
  absl::Status refused;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<Json> bad =
        admin_.client->Create(Claims(), MpsClaim("bad", "ten gigs"));
    if (!bad.ok()) {
      refused = bad.status();
      break;
    }
    ASSERT_TRUE(admin_.client->Delete(Claims() + "/bad").ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(refused.ok()) << "the webhook never refused the bad claim";
  EXPECT_THAT(refused.message(),
              HasSubstr("spec.devices.config[0].opaque.parameters.sharing."
                        "mpsConfig.defaultPinnedDeviceMemoryLimit: "));

  // A template is checked at its own path.
  absl::StatusOr<Json> bad_template = admin_.client->Create(
      Templates(), Template("bad-template", MpsClaim("", "1Ki")));
  ASSERT_FALSE(bad_template.ok());
  EXPECT_THAT(bad_template.status().message(),
              HasSubstr("spec.spec.devices.config[0].opaque.parameters."
                        "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: "
                        "\"1Ki\" is below 1Mi"));

  // NVIDIA's example as published, and another driver's configuration.
  made = admin_.client->Create(Claims(), MpsClaim("nvidia-example", "10Gi"));
  EXPECT_TRUE(made.ok()) << made.status();
  made = admin_.client->Create(
      Templates(), Template("nvidia-example", MpsClaim("", "10Gi")));
  EXPECT_TRUE(made.ok()) << made.status();
  Json other = MpsClaim("other-driver", "ten gigs");
  other["spec"]["devices"]["config"][0]["opaque"]["driver"] =
      "other.example.com";
  made = admin_.client->Create(Claims(), other);
  EXPECT_TRUE(made.ok()) << made.status();

  EXPECT_TRUE(admin_.client
                  ->Delete(absl::StrCat(kWebhooks, "/gpulet-dra-claim-configs"))
                  .ok());
}

}  // namespace
}  // namespace gpulet::dra
