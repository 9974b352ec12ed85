#include "src/dra/webhook/admission.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::dra {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

constexpr char kDriver[] = "gpu.nvidia.com";

// NVIDIA's MPS example claim template as published
// (NVIDIA/k8s-dra-driver-gpu, Apache-2.0,
// demo/specs/quickstart/v1/gpu-test-mps.yaml), in JSON.
json NvidiaMpsTemplate() {
  return json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
    "metadata": {"namespace": "gpu-test-mps", "name": "shared-gpu"},
    "spec": {"spec": {"devices": {
      "requests": [{"name": "mps-gpu",
                    "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
      "config": [{"requests": ["mps-gpu"], "opaque": {
        "driver": "gpu.nvidia.com",
        "parameters": {"apiVersion": "resource.nvidia.com/v1beta1",
                       "kind": "GpuConfig",
                       "sharing": {"strategy": "MPS", "mpsConfig": {
                         "defaultActiveThreadPercentage": 50,
                         "defaultPinnedDeviceMemoryLimit": "10Gi"}}}}}]}}}})");
}

json Claim(json configs) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"namespace", "ns"}, {"name", "c"}}},
          {"spec", {{"devices", {{"config", std::move(configs)}}}}}};
}

json Opaque(const std::string& driver, json parameters) {
  return {
      {"opaque", {{"driver", driver}, {"parameters", std::move(parameters)}}}};
}

json Review(const std::string& kind, json object,
            const std::string& operation = "CREATE") {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
            {"kind",
             {{"group", "resource.k8s.io"}, {"version", "v1"}, {"kind", kind}}},
            {"operation", operation},
            {"object", std::move(object)}}}};
}

json Response(const json& review) {
  absl::StatusOr<json> got = ReviewClaimConfigs(review, kDriver);
  EXPECT_TRUE(got.ok()) << got.status();
  if (!got.ok()) return json();
  EXPECT_EQ((*got)["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ((*got)["kind"], "AdmissionReview");
  EXPECT_EQ((*got)["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  return (*got)["response"];
}

TEST(AdmissionTest, NvidiasExampleTemplateIsAllowed) {
  const json r = Response(Review("ResourceClaimTemplate", NvidiaMpsTemplate()));
  EXPECT_EQ(r["allowed"], true);
  EXPECT_FALSE(r.contains("status"));
}

TEST(AdmissionTest, AnUnimplementedFieldIsDeniedWithItsPath) {
  json t = NvidiaMpsTemplate();
  t["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]["sharing"]
   ["mpsConfig"]["defaultPinnedDeviceMemoryLimit"] = "10Qi";
  const json r = Response(Review("ResourceClaimTemplate", t));
  EXPECT_EQ(r["allowed"], false);
  EXPECT_EQ(r["status"]["code"], 422);
  EXPECT_EQ(r["status"]["reason"], "Invalid");
  EXPECT_THAT(r["status"]["message"].get<std::string>(),
              HasSubstr("spec.spec.devices.config[0].opaque.parameters."
                        "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: "));
}

TEST(AdmissionTest, EveryBadConfigOfOursIsNamedAndOthersAreLeftAlone) {
  const json gpu_ts = {{"apiVersion", "resource.nvidia.com/v1beta1"},
                       {"kind", "GpuConfig"},
                       {"sharing",
                        {{"strategy", "TimeSlicing"},
                         {"timeSlicingConfig", {{"interval", "Long"}}}}}};
  json unknown = gpu_ts;
  unknown["sharing"]["timeSlicingConfig"]["slice"] = "5ms";
  const json claim = Claim(json::array(
      {Opaque(kDriver, gpu_ts), Opaque("other.example.com", {{"x", 1}}),
       Opaque(kDriver, unknown), json{{"requests", json::array()}},
       Opaque(kDriver, {{"apiVersion", "v1"}})}));
  const json r = Response(Review("ResourceClaim", claim));
  EXPECT_EQ(r["allowed"], false);
  const std::string message = r["status"]["message"];
  EXPECT_THAT(message, HasSubstr("spec.devices.config[2].opaque.parameters."
                                 "sharing.timeSlicingConfig.slice: unknown "
                                 "field"));
  EXPECT_THAT(message, HasSubstr("; spec.devices.config[4].opaque.parameters."
                                 "apiVersion: \"v1\""));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("config[0]")));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("config[1]")));

  // The same claim deleted, and objects that are no claim, pass.
  EXPECT_EQ(Response(Review("ResourceClaim", claim, "DELETE"))["allowed"],
            true);
  EXPECT_EQ(Response(Review("Pod", claim))["allowed"], true);
  EXPECT_EQ(Response(Review("ResourceClaim", json::object()))["allowed"], true);
  EXPECT_EQ(Response(Review("ResourceClaim", Claim("x")))["allowed"], true);
}

TEST(AdmissionTest, ABodyThatIsNoReviewIsAnError) {
  json no_uid = Review("ResourceClaim", Claim(json::array()));
  no_uid["request"].erase("uid");
  json old = Review("ResourceClaim", Claim(json::array()));
  old["apiVersion"] = "admission.k8s.io/v1beta1";
  for (const json& bad : {json(), json::array(), no_uid, old,
                          json{{"apiVersion", 1}, {"kind", {1}}}}) {
    EXPECT_EQ(ReviewClaimConfigs(bad, kDriver).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad.dump();
  }
}

http::Request Post(const std::string& path, const std::string& type,
                   const std::string& body) {
  http::Request r;
  r.method = "POST";
  r.path = path;
  r.target = path;
  r.version = "HTTP/1.1";
  if (!type.empty()) r.headers.push_back({"content-type", type});
  r.body = body;
  return r;
}

TEST(AdmissionTest, HandlerServesTheReviewPathAndProbes) {
  const http::Handler handler = WebhookHandler(kDriver);
  json bad = NvidiaMpsTemplate();
  bad["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]["kind"] =
      "VfioDeviceConfig";
  http::Response r = handler(Post(kWebhookPath, "application/json",
                                  Review("ResourceClaimTemplate", bad).dump()));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  const json answer = json::parse(r.body);
  EXPECT_EQ(answer["response"]["allowed"], false);
  EXPECT_THAT(answer["response"]["status"]["message"].get<std::string>(),
              HasSubstr("opaque.parameters.sharing: is not a field of "
                        "VfioDeviceConfig"));

  EXPECT_EQ(handler(Post(kWebhookPath, "text/plain", "{}")).status, 415);
  EXPECT_EQ(handler(Post(kWebhookPath, "application/json", "{not json")).status,
            400);
  EXPECT_EQ(handler(Post("/other", "application/json", "{}")).status, 404);
  http::Request get = Post(kWebhookPath, "", "");
  get.method = "GET";
  EXPECT_EQ(handler(get).status, 405);
  get.path = "/readyz";
  EXPECT_EQ(handler(get).status, 200);
  get.path = "/healthz";
  EXPECT_EQ(handler(get).body, "ok\n");
}

}  // namespace
}  // namespace gpulet::dra
