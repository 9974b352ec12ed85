#include "src/dra/kubelet/dra_services.h"

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dra/v1/api.pb.h"
#include "dra/v1beta1/api.pb.h"
#include "drahealth/v1alpha1/api.pb.h"
#include "pluginregistration/v1/api.pb.h"
#include "src/base/common/logging.h"
#include "src/base/common/status_macros.h"

namespace gpulet::dra {
namespace {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

// The generated message sets of one DRA version, as template arguments.
struct V1 {
  using PrepareRequest = drav1::NodePrepareResourcesRequest;
  using PrepareResponse = drav1::NodePrepareResourcesResponse;
  using UnprepareRequest = drav1::NodeUnprepareResourcesRequest;
  using UnprepareResponse = drav1::NodeUnprepareResourcesResponse;
  using Device = drav1::Device;
  static constexpr char kPrefix[] =
      "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/";
  static constexpr bool kHasShareId = true;
};
struct V1beta1 {
  using PrepareRequest = drav1beta1::NodePrepareResourcesRequest;
  using PrepareResponse = drav1beta1::NodePrepareResourcesResponse;
  using UnprepareRequest = drav1beta1::NodeUnprepareResourcesRequest;
  using UnprepareResponse = drav1beta1::NodeUnprepareResourcesResponse;
  using Device = drav1beta1::Device;
  static constexpr char kPrefix[] =
      "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/";
  static constexpr bool kHasShareId = false;
};

constexpr char kHealthWatch[] =
    "/v1alpha1.DRAResourceHealth/NodeWatchResources";

template <typename Message>
absl::Status Parse(std::string_view bytes, const char* method, Message& out) {
  if (!out.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot parse the ", method, " request"));
  }
  return absl::OkStatus();
}

// A unary method from a handler of parsed messages that cannot fail (every
// claim's error travels in the response).
template <typename Req, typename Resp, typename Handler>
h2::UnaryMethod Unary(const char* name, Handler handler) {
  return [name, handler = std::move(handler)](
             std::string_view bytes) -> absl::StatusOr<std::string> {
    Req request;
    if (absl::Status s = Parse(bytes, name, request); !s.ok()) return s;
    Resp response;
    handler(request, response);
    return response.SerializeAsString();
  };
}

template <typename Request>
std::vector<ClaimRef> Claims(const Request& req) {
  std::vector<ClaimRef> out;
  for (const auto& c : req.claims()) {
    out.push_back(
        {.namespace_name = c.namespace_(), .name = c.name(), .uid = c.uid()});
  }
  return out;
}

// A claim the API server did not give in time fails the whole call
// (DEADLINE_EXCEEDED naming it): the kubelet tries again, and the claims
// prepared meanwhile are answered from the checkpoint then.
template <typename Api>
absl::Status Prepare(ClaimPreparer& preparer,
                     const typename Api::PrepareRequest& req,
                     typename Api::PrepareResponse& resp,
                     std::stop_token stop) {
  std::map<std::string, PrepareResult> results =
      preparer.Prepare(Claims(req), stop);
  std::vector<std::string> late;
  for (const auto& [uid, result] : results) {
    if (result.status.code() == absl::StatusCode::kDeadlineExceeded) {
      late.emplace_back(result.status.message());
    }
  }
  if (!late.empty()) {
    GPULET_LOG(WARNING) << "NodePrepareResources: "
                        << absl::StrJoin(late, "; ");
    return absl::DeadlineExceededError(absl::StrJoin(late, "; "));
  }
  for (auto& [uid, result] : results) {
    auto& answer = (*resp.mutable_claims())[uid];
    if (!result.status.ok()) {
      GPULET_LOG(WARNING) << "NodePrepareResources: "
                          << result.status.message();
      answer.set_error(std::string(result.status.message()));
      continue;
    }
    for (const PreparedDevice& d : result.devices) {
      typename Api::Device* device = answer.add_devices();
      for (const std::string& r : d.requests) device->add_request_names(r);
      device->set_pool_name(d.pool);
      device->set_device_name(d.device);
      for (const std::string& id : d.cdi_device_ids) {
        device->add_cdi_device_ids(id);
      }
      if constexpr (Api::kHasShareId) {
        if (d.share_id) device->set_share_id(*d.share_id);
      }
    }
  }
  return absl::OkStatus();
}

template <typename Api>
void Unprepare(ClaimPreparer& preparer,
               const typename Api::UnprepareRequest& req,
               typename Api::UnprepareResponse& resp) {
  for (auto& [uid, status] : preparer.Unprepare(Claims(req))) {
    auto& answer = (*resp.mutable_claims())[uid];
    if (!status.ok()) {
      GPULET_LOG(WARNING) << "NodeUnprepareResources: claim " << uid << ": "
                          << status.message();
      answer.set_error(std::string(status.message()));
    }
  }
}

// Prepare and unprepare run on `workers`: a claim read from the API
// server, spec files, sharing set up or released.
template <typename Api>
void AddDraVersion(ClaimPreparer& preparer, h2::CallWorkers& workers,
                   h2::Service& service) {
  service.async_unary[absl::StrCat(Api::kPrefix, "NodePrepareResources")] =
      h2::OnWorkers(
          workers, "NodePrepareResources",
          [&preparer](std::string_view bytes,
                      std::stop_token stop) -> absl::StatusOr<std::string> {
            typename Api::PrepareRequest req;
            GPULET_RETURN_IF_ERROR(Parse(bytes, "NodePrepareResources", req));
            typename Api::PrepareResponse resp;
            GPULET_RETURN_IF_ERROR(Prepare<Api>(preparer, req, resp, stop));
            return resp.SerializeAsString();
          });
  service.async_unary[absl::StrCat(Api::kPrefix, "NodeUnprepareResources")] =
      h2::OnWorkers(
          workers, "NodeUnprepareResources",
          [&preparer](std::string_view bytes,
                      std::stop_token) -> absl::StatusOr<std::string> {
            typename Api::UnprepareRequest req;
            GPULET_RETURN_IF_ERROR(Parse(bytes, "NodeUnprepareResources", req));
            typename Api::UnprepareResponse resp;
            Unprepare<Api>(preparer, req, resp);
            return resp.SerializeAsString();
          });
}

::v1alpha1::DeviceHealth ToProto(const std::string& pool,
                                 const DeviceHealth& h) {
  ::v1alpha1::DeviceHealth out;
  out.mutable_device()->set_pool_name(pool);
  out.mutable_device()->set_device_name(h.device);
  out.set_health(h.healthy ? ::v1alpha1::HEALTHY : ::v1alpha1::UNHEALTHY);
  out.set_last_updated_time(h.updated_unix);
  out.set_message(h.message);
  return out;
}

// One NodeWatchResources stream: every device first, then what changed
// since the last message, whenever the server is woken (the board's
// subscription does that). The server ends it when the kubelet goes or the
// server stops.
class HealthSource final : public h2::StreamSource {
 public:
  HealthSource(DeviceHealthBoard& board,
               std::shared_ptr<const std::string> pool)
      : board_(board), pool_(std::move(pool)) {}

  h2::StreamStep Next() override {
    const uint64_t version = board_.version();
    if (started_ && version == version_) return {};
    version_ = version;
    std::map<std::string, DeviceHealth> current = board_.Snapshot();
    ::v1alpha1::NodeWatchResourcesResponse message;
    for (const auto& [name, h] : current) {
      auto it = sent_.find(name);
      if (!started_ || it == sent_.end() || !(it->second == h)) {
        *message.add_devices() = ToProto(*pool_, h);
      }
    }
    sent_ = std::move(current);
    if (started_ && message.devices_size() == 0) return {};
    started_ = true;
    return {std::make_shared<const std::string>(message.SerializeAsString()),
            std::nullopt};
  }

  void Ended(std::string_view why) override {
    GPULET_LOG(INFO) << "DRA health stream ended: " << why;
  }

 private:
  DeviceHealthBoard& board_;
  const std::shared_ptr<const std::string> pool_;
  bool started_ = false;
  uint64_t version_ = 0;
  std::map<std::string, DeviceHealth> sent_;
};

}  // namespace

h2::Service RegistrationMethods(
    std::string driver, std::string endpoint,
    std::function<void(bool, const std::string&)> on_status) {
  h2::Service service;
  ::pluginregistration::PluginInfo info;
  info.set_type("DRAPlugin");
  info.set_name(driver);
  info.set_endpoint(std::move(endpoint));
  info.add_supported_versions("v1.DRAPlugin");
  info.add_supported_versions("v1beta1.DRAPlugin");
  service.unary["/pluginregistration.Registration/GetInfo"] =
      Unary<::pluginregistration::InfoRequest,
            ::pluginregistration::PluginInfo>(
          "GetInfo",
          [info](const ::pluginregistration::InfoRequest&,
                 ::pluginregistration::PluginInfo& out) { out = info; });
  service.unary["/pluginregistration.Registration/NotifyRegistrationStatus"] =
      Unary<::pluginregistration::RegistrationStatus,
            ::pluginregistration::RegistrationStatusResponse>(
          "NotifyRegistrationStatus",
          [driver = std::move(driver), on_status = std::move(on_status)](
              const ::pluginregistration::RegistrationStatus& s,
              ::pluginregistration::RegistrationStatusResponse&) {
            if (s.plugin_registered()) {
              GPULET_LOG(INFO) << "kubelet registered DRA driver " << driver;
            } else {
              GPULET_LOG(ERROR) << "kubelet refused DRA driver " << driver
                                << ": " << s.error();
            }
            if (on_status) on_status(s.plugin_registered(), s.error());
          });
  return service;
}

h2::Service DraMethods(ClaimPreparer& preparer, DeviceHealthBoard& board,
                       std::string pool, h2::CallWorkers& workers) {
  h2::Service service;
  AddDraVersion<V1>(preparer, workers, service);
  AddDraVersion<V1beta1>(preparer, workers, service);
  service.streaming[kHealthWatch] =
      [&board, pool = std::make_shared<const std::string>(std::move(pool))](
          std::string_view bytes)
      -> absl::StatusOr<std::unique_ptr<h2::StreamSource>> {
    ::v1alpha1::NodeWatchResourcesRequest request;
    if (absl::Status s = Parse(bytes, "NodeWatchResources", request); !s.ok()) {
      return s;
    }
    return std::make_unique<HealthSource>(board, pool);
  };
  return service;
}

}  // namespace gpulet::dra
