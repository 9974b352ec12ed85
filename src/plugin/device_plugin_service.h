// DevicePluginService: the v1beta1.DevicePlugin gRPC service of one
// resource, for one run of a PluginServer (a new one is made per Start, so
// a stopped service never serves again).
//
// ListAndWatch streams block in DeviceList::WaitForChange and end when the
// client goes away (noticed within kCancelPoll), when the shared DeviceList
// is closed, or when Stop() is called; Stop() must be called before the
// gRPC server is shut down so streams end at once instead of at the
// shutdown deadline.
//
// Thread safety: gRPC calls the methods concurrently; Stop() from any
// thread. Borrows the options, device list and handlers, which must outlive
// it.
#pragma once

#include <atomic>

#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "src/plugin/device_list.h"
#include "src/plugin/plugin_server.h"
#include "src/pluginapi/handlers.h"

namespace gpulet::plugin {

class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  // How long a stream waits for a change before checking whether its
  // client cancelled: gRPC's sync API gives no cancellation callback.
  static constexpr absl::Duration kCancelPoll = absl::Seconds(1);

  DevicePluginService(const PluginOptions& options, DeviceList& devices,
                      const pluginapi::AllocateHandler& allocate,
                      const pluginapi::PreferredHandler& preferred);

  // Ends every ListAndWatch stream; later streams end after one message.
  void Stop();

  grpc::Status GetDevicePluginOptions(
      grpc::ServerContext* context, const v1beta1::Empty* request,
      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(
      grpc::ServerContext* context, const v1beta1::Empty* request,
      grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(
      grpc::ServerContext* context,
      const v1beta1::PreferredAllocationRequest* request,
      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context,
                        const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(
      grpc::ServerContext* context,
      const v1beta1::PreStartContainerRequest* request,
      v1beta1::PreStartContainerResponse* response) override;

 private:
  // Why a ListAndWatch stream should end now, or nullptr.
  const char* StreamEndReason(grpc::ServerContext* context) const;

  const PluginOptions& options_;
  DeviceList& devices_;
  const pluginapi::AllocateHandler& allocate_;
  const pluginapi::PreferredHandler& preferred_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> streams_{0};
};

}  // namespace gpulet::plugin
