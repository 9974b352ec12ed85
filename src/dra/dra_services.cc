#include "src/dra/dra_services.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "src/common/logging.h"

namespace gpulet::dra {
namespace {

// How often a health stream looks whether its kubelet went away or the
// server stops; a change itself wakes it at once.
constexpr absl::Duration kHealthWakeup = absl::Milliseconds(200);

template <typename Request>
std::vector<ClaimRef> Claims(const Request& req) {
  std::vector<ClaimRef> out;
  for (const auto& c : req.claims()) {
    out.push_back(
        {.namespace_name = c.namespace_(), .name = c.name(), .uid = c.uid()});
  }
  return out;
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

}  // namespace

RegistrationService::RegistrationService(
    std::string driver, std::string endpoint,
    std::function<void(bool, const std::string&)> on_status)
    : driver_(std::move(driver)),
      endpoint_(std::move(endpoint)),
      on_status_(std::move(on_status)) {}

grpc::Status RegistrationService::GetInfo(
    grpc::ServerContext*, const ::pluginregistration::InfoRequest*,
    ::pluginregistration::PluginInfo* info) {
  info->set_type("DRAPlugin");
  info->set_name(driver_);
  info->set_endpoint(endpoint_);
  info->add_supported_versions("v1.DRAPlugin");
  info->add_supported_versions("v1beta1.DRAPlugin");
  return grpc::Status::OK;
}

grpc::Status RegistrationService::NotifyRegistrationStatus(
    grpc::ServerContext*, const ::pluginregistration::RegistrationStatus* s,
    ::pluginregistration::RegistrationStatusResponse*) {
  if (s->plugin_registered()) {
    GPULET_LOG(INFO) << "kubelet registered DRA driver " << driver_;
  } else {
    GPULET_LOG(ERROR) << "kubelet refused DRA driver " << driver_ << ": "
                      << s->error();
  }
  if (on_status_) on_status_(s->plugin_registered(), s->error());
  return grpc::Status::OK;
}

template <typename Api>
grpc::Status DraPluginService<Api>::NodePrepareResources(
    grpc::ServerContext*, const typename Api::NodePrepareResourcesRequest* req,
    typename Api::NodePrepareResourcesResponse* resp) {
  for (auto& [uid, result] : preparer_.Prepare(Claims(*req))) {
    auto& answer = (*resp->mutable_claims())[uid];
    if (!result.status.ok()) {
      GPULET_LOG(WARNING) << "NodePrepareResources: " << result.status.message();
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
  return grpc::Status::OK;
}

template <typename Api>
grpc::Status DraPluginService<Api>::NodeUnprepareResources(
    grpc::ServerContext*,
    const typename Api::NodeUnprepareResourcesRequest* req,
    typename Api::NodeUnprepareResourcesResponse* resp) {
  for (auto& [uid, status] : preparer_.Unprepare(Claims(*req))) {
    auto& answer = (*resp->mutable_claims())[uid];
    if (!status.ok()) {
      GPULET_LOG(WARNING) << "NodeUnprepareResources: claim " << uid << ": "
                          << status.message();
      answer.set_error(std::string(status.message()));
    }
  }
  return grpc::Status::OK;
}

template class DraPluginService<V1>;
template class DraPluginService<V1beta1>;

grpc::Status HealthService::NodeWatchResources(
    grpc::ServerContext* context, const ::v1alpha1::NodeWatchResourcesRequest*,
    grpc::ServerWriter<::v1alpha1::NodeWatchResourcesResponse>* writer) {
  uint64_t version = board_.version();
  std::map<std::string, DeviceHealth> sent = board_.Snapshot();
  ::v1alpha1::NodeWatchResourcesResponse first;
  for (const auto& [name, h] : sent) *first.add_devices() = ToProto(pool_, h);
  if (!writer->Write(first)) return grpc::Status::OK;
  while (!stopping_ && !context->IsCancelled()) {
    const uint64_t now = board_.WaitForChange(version, kHealthWakeup);
    if (now == version) continue;
    version = now;
    ::v1alpha1::NodeWatchResourcesResponse changes;
    std::map<std::string, DeviceHealth> current = board_.Snapshot();
    for (const auto& [name, h] : current) {
      auto it = sent.find(name);
      if (it == sent.end() || !(it->second == h)) {
        *changes.add_devices() = ToProto(pool_, h);
      }
    }
    sent = std::move(current);
    if (changes.devices_size() > 0 && !writer->Write(changes)) break;
  }
  return grpc::Status::OK;
}

}  // namespace gpulet::dra
