// The gRPC service implementations DraServer serves (synchronous API): plugin
// registration, the DRA service in its v1 and v1beta1 versions (one
// template over the two generated APIs, which differ only in
// Device.share_id), and DRA health. Internal to src/dra.
//
// Thread safety: called concurrently from gRPC threads; state lives in the
// ClaimPreparer and DeviceHealthBoard, which are thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "drahealth/v1alpha1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "src/dra/claim_preparer.h"
#include "src/dra/device_health.h"

namespace gpulet::dra {

class RegistrationService final
    : public ::pluginregistration::Registration::Service {
 public:
  RegistrationService(std::string driver, std::string endpoint,
                      std::function<void(bool, const std::string&)> on_status);
  grpc::Status GetInfo(grpc::ServerContext*,
                       const ::pluginregistration::InfoRequest*,
                       ::pluginregistration::PluginInfo* info) override;
  grpc::Status NotifyRegistrationStatus(
      grpc::ServerContext*, const ::pluginregistration::RegistrationStatus* s,
      ::pluginregistration::RegistrationStatusResponse*) override;

 private:
  const std::string driver_;
  const std::string endpoint_;
  const std::function<void(bool, const std::string&)> on_status_;
};

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

// Service is the generated DRAPlugin::Service of one version; the messages
// are looked up in the same namespace through the request types.
template <typename Api>
class DraPluginService final : public Api::DRAPlugin::Service {
 public:
  explicit DraPluginService(ClaimPreparer& preparer) : preparer_(preparer) {}
  grpc::Status NodePrepareResources(
      grpc::ServerContext*, const typename Api::NodePrepareResourcesRequest* req,
      typename Api::NodePrepareResourcesResponse* resp) override;
  grpc::Status NodeUnprepareResources(
      grpc::ServerContext*,
      const typename Api::NodeUnprepareResourcesRequest* req,
      typename Api::NodeUnprepareResourcesResponse* resp) override;

 private:
  ClaimPreparer& preparer_;
};

// The generated namespaces as template arguments.
struct V1 {
  using DRAPlugin = drav1::DRAPlugin;
  using NodePrepareResourcesRequest = drav1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = drav1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = drav1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = drav1::NodeUnprepareResourcesResponse;
  using Device = drav1::Device;
  static constexpr bool kHasShareId = true;
};
struct V1beta1 {
  using DRAPlugin = drav1beta1::DRAPlugin;
  using NodePrepareResourcesRequest = drav1beta1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = drav1beta1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest =
      drav1beta1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse =
      drav1beta1::NodeUnprepareResourcesResponse;
  using Device = drav1beta1::Device;
  static constexpr bool kHasShareId = false;
};

extern template class DraPluginService<V1>;
extern template class DraPluginService<V1beta1>;

// Streams the board: every known device first, then each change, until the
// kubelet goes away or Stop().
class HealthService final : public ::v1alpha1::DRAResourceHealth::Service {
 public:
  HealthService(std::string pool, DeviceHealthBoard& board)
      : pool_(std::move(pool)), board_(board) {}
  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const ::v1alpha1::NodeWatchResourcesRequest*,
      grpc::ServerWriter<::v1alpha1::NodeWatchResourcesResponse>* writer)
      override;
  // Ends every stream (they notice within a wait period).
  void Stop() { stopping_ = true; }

 private:
  const std::string pool_;
  DeviceHealthBoard& board_;
  std::atomic<bool> stopping_ = false;
};

}  // namespace gpulet::dra
