#include "src/dra/webhook/admission.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/dra/kubelet/claim_config.h"

namespace gpulet::dra {
namespace {

using json = nlohmann::json;

constexpr char kReviewVersion[] = "admission.k8s.io/v1";

// `object[key]` when it is a string, else "" (json::value would throw on
// another type).
std::string Str(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// `object[key]`, or null when `object` is no object or has no `key`.
const json* Member(const json* object, const char* key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &*it;
}

// The request's object's device configurations and their path, or null
// when the object is of no kind this webhook checks or has none.
std::pair<const json*, std::string> DeviceConfigs(const json& request) {
  const json* kind = Member(&request, "kind");
  if (kind == nullptr || Str(*kind, "group") != "resource.k8s.io") {
    return {nullptr, ""};
  }
  const std::string name = Str(*kind, "kind");
  const json* spec = Member(Member(&request, "object"), "spec");
  std::string path = "spec";
  if (name == "ResourceClaimTemplate") {
    spec = Member(spec, "spec");
    path = "spec.spec";
  } else if (name != "ResourceClaim") {
    return {nullptr, ""};
  }
  const json* configs = Member(Member(spec, "devices"), "config");
  return {configs, path + ".devices.config"};
}

// The errors of the configurations of ours in `configs`.
std::vector<std::string> Check(const json& configs, const std::string& path,
                               absl::string_view driver) {
  std::vector<std::string> errors;
  if (!configs.is_array()) return errors;  // the API server's to refuse
  for (size_t i = 0; i < configs.size(); ++i) {
    const json& config = configs[i];
    const json* opaque = Member(&config, "opaque");
    if (opaque == nullptr || Str(*opaque, "driver") != driver) continue;
    const std::string at = absl::StrCat(path, "[", i, "].opaque.parameters");
    const json* parameters = Member(opaque, "parameters");
    absl::StatusOr<OpaqueSettings> decoded = DecodeOpaqueParameters(
        parameters != nullptr ? *parameters : json(), at);
    if (!decoded.ok()) errors.emplace_back(decoded.status().message());
  }
  return errors;
}

}  // namespace

absl::StatusOr<json> ReviewClaimConfigs(const json& review,
                                        absl::string_view driver) {
  if (Str(review, "apiVersion") != kReviewVersion ||
      Str(review, "kind") != "AdmissionReview") {
    return absl::InvalidArgumentError(
        absl::StrCat("the body is not an AdmissionReview of ", kReviewVersion));
  }
  const json* request = Member(&review, "request");
  if (request == nullptr || Str(*request, "uid").empty()) {
    return absl::InvalidArgumentError(
        "the AdmissionReview has no request with a uid");
  }
  json response = {{"uid", Str(*request, "uid")}, {"allowed", true}};
  const auto [configs, path] = DeviceConfigs(*request);
  if (configs != nullptr && Str(*request, "operation") != "DELETE") {
    const std::vector<std::string> errors = Check(*configs, path, driver);
    if (!errors.empty()) {
      response["allowed"] = false;
      response["status"] = {
          {"code", 422},
          {"reason", "Invalid"},
          {"message", absl::StrCat("opaque configuration of driver ", driver,
                                   " refused: ", absl::StrJoin(errors, "; "))}};
    }
  }
  return json{{"apiVersion", kReviewVersion},
              {"kind", "AdmissionReview"},
              {"response", std::move(response)}};
}

http::Handler WebhookHandler(std::string driver) {
  return [driver = std::move(driver)](const http::Request& request) {
    if (request.path == "/healthz" || request.path == "/readyz") {
      if (request.method != "GET") return http::TextResponse(405, "only GET");
      return http::TextResponse(200, "ok");
    }
    if (request.path != kWebhookPath) {
      return http::TextResponse(404, "not found");
    }
    if (request.method != "POST") return http::TextResponse(405, "only POST");
    const std::string* type = request.Header("content-type");
    if (type == nullptr ||
        !absl::StartsWith(absl::AsciiStrToLower(*type), "application/json")) {
      return http::TextResponse(415, "expected Content-Type application/json");
    }
    const json review = json::parse(request.body, nullptr,
                                    /*allow_exceptions=*/false);
    absl::StatusOr<json> answer = ReviewClaimConfigs(review, driver);
    if (!answer.ok()) return http::TextResponse(400, answer.status().message());
    return http::Response{.status = 200,
                          .content_type = "application/json",
                          .body = answer->dump()};
  };
}

}  // namespace gpulet::dra
