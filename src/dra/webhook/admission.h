// The validating admission webhook of our driver's claim configurations:
// an AdmissionReview (admission.k8s.io/v1) of a ResourceClaim or a
// ResourceClaimTemplate (resource.k8s.io) is allowed unless one of its
// `spec.devices.config[].opaque` entries (a template's under `spec.spec`)
// whose driver is ours fails DecodeOpaqueParameters
// (src/dra/kubelet/claim_config.h, the decoder `gpulet dra` prepares claims
// with): then it is denied (422, reason Invalid) with every failing field's
// full path ("spec.devices.config[0].opaque.parameters.sharing.mpsConfig.
// defaultPinnedDeviceMemoryLimit: ..."), so a mistake shows at `kubectl
// create` instead of when a pod starts. Other drivers' configurations, and
// objects of other kinds or a DELETE, are allowed untouched.
//
// Served over HTTPS (http::Server) by `gpulet dra webhook`
// (webhook_runner.h):
//   POST /validate-resource-claim-parameters  Content-Type application/json
//        -> 200 with the AdmissionReview answer; a body that is no
//        AdmissionReview v1 with a request -> 400; another type -> 415
//   GET  /healthz, /readyz -> "ok"
// Another method on those paths is 405, another path 404.
//
// Thread safety: pure functions; the handler may be called from many
// threads at once.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "src/net/http/request.h"
#include "src/net/http/server.h"

namespace gpulet::dra {

inline constexpr char kWebhookPath[] = "/validate-resource-claim-parameters";

// The AdmissionReview answering `review`'s request. InvalidArgument naming
// the field when `review` is not an AdmissionReview of admission.k8s.io/v1
// with a request and its uid.
absl::StatusOr<nlohmann::json> ReviewClaimConfigs(const nlohmann::json& review,
                                                  absl::string_view driver);

// Serves the paths above for `driver`'s configurations.
http::Handler WebhookHandler(std::string driver);

}  // namespace gpulet::dra
