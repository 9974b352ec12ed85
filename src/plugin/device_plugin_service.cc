#include "src/plugin/device_plugin_service.h"

#include "src/common/logging.h"
#include "src/plugin/request_handlers.h"

namespace gpulet::plugin {

using pluginapi::AllocateHandler;
using pluginapi::DeviceSnapshotPtr;
using pluginapi::PreferredHandler;

namespace {

// A bad request is the caller's problem (WARNING); anything else means a
// policy failed (ERROR). Successes only at -v 1: one per container start.
void LogOutcome(const char* rpc, const google::protobuf::Message& request,
                const grpc::Status& status) {
  if (status.ok()) {
    GPULET_VLOG(1) << rpc << " " << request.ShortDebugString();
  } else if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    GPULET_LOG(WARNING) << "rejected " << rpc << ": " << status.error_message();
  } else {
    GPULET_LOG(ERROR) << rpc << " failed: " << status.error_message();
  }
}

}  // namespace

DevicePluginService::DevicePluginService(const PluginOptions& options,
                                         DeviceList& devices,
                                         const AllocateHandler& allocate,
                                         const PreferredHandler& preferred)
    : options_(options),
      devices_(devices),
      allocate_(allocate),
      preferred_(preferred) {}

void DevicePluginService::Stop() {
  stopping_ = true;
  devices_.WakeWaiters();
}

grpc::Status DevicePluginService::GetDevicePluginOptions(
    grpc::ServerContext* /*context*/, const v1beta1::Empty* /*request*/,
    v1beta1::DevicePluginOptions* response) {
  response->set_pre_start_required(options_.pre_start_required);
  response->set_get_preferred_allocation_available(
      options_.get_preferred_allocation_available);
  return grpc::Status::OK;
}

const char* DevicePluginService::StreamEndReason(
    grpc::ServerContext* context) const {
  if (stopping_) return "server stopping";
  if (context->IsCancelled()) return "client cancelled";
  if (devices_.closed()) return "device list closed";
  return nullptr;
}

grpc::Status DevicePluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty* /*request*/,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  const int open = ++streams_;
  GPULET_LOG(INFO) << "ListAndWatch stream opened for "
                   << options_.resource_name << " (" << open << " open)";
  DeviceSnapshotPtr snapshot = devices_.Snapshot();
  const char* why = nullptr;
  // Every message is the full list (the kubelet replaces its view with it);
  // a burst of changes collapses into one message with the latest list.
  while (why == nullptr) {
    if (!writer->Write(ToListAndWatchResponse(*snapshot))) {
      why = "write failed, client gone";
      break;
    }
    const uint64_t sent = snapshot->version;
    while (why == nullptr && snapshot->version == sent) {
      why = StreamEndReason(context);
      if (why == nullptr) {
        snapshot = devices_.WaitForChange(sent, kCancelPoll, &stopping_);
      }
    }
  }
  const int left = --streams_;
  GPULET_LOG(INFO) << "ListAndWatch stream for " << options_.resource_name
                   << " ended: " << why << " (" << left << " open)";
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext* /*context*/,
    const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  grpc::Status status =
      HandlePreferred(options_.resource_name, *devices_.Snapshot(), *request,
                      preferred_, response);
  LogOutcome("GetPreferredAllocation", *request, status);
  return status;
}

grpc::Status DevicePluginService::Allocate(
    grpc::ServerContext* /*context*/, const v1beta1::AllocateRequest* request,
    v1beta1::AllocateResponse* response) {
  grpc::Status status =
      HandleAllocate(options_.resource_name, *devices_.Snapshot(), *request,
                     allocate_, response);
  LogOutcome("Allocate", *request, status);
  return status;
}

grpc::Status DevicePluginService::PreStartContainer(
    grpc::ServerContext* /*context*/,
    const v1beta1::PreStartContainerRequest* /*request*/,
    v1beta1::PreStartContainerResponse* /*response*/) {
  return grpc::Status::OK;
}

}  // namespace gpulet::plugin
