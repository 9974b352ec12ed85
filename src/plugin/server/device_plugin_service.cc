#include "src/plugin/server/device_plugin_service.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "src/base/common/logging.h"
#include "src/model/pluginapi/call_scope.h"
#include "src/plugin/server/list_encoding.h"
#include "src/plugin/server/request_handlers.h"

namespace gpulet::plugin {

using pluginapi::AllocateHandler;
using pluginapi::PreferredHandler;

namespace {

constexpr char kPrefix[] = "/v1beta1.DevicePlugin/";

// A bad request is the caller's problem (WARNING); anything else means a
// policy failed (ERROR). Successes only at -v 1: one per container start.
void LogOutcome(const char* rpc, const google::protobuf::Message& request,
                const absl::Status& status) {
  if (status.ok()) {
    GPULET_VLOG(1) << rpc << " " << request.ShortDebugString();
  } else if (status.code() == absl::StatusCode::kInvalidArgument) {
    GPULET_LOG(WARNING) << "rejected " << rpc << ": " << status.message();
  } else {
    GPULET_LOG(ERROR) << rpc << " failed: " << status.message();
  }
}

// The answer of a handler of parsed messages.
template <typename Req, typename Resp, typename Handler>
absl::StatusOr<std::string> Answer(const char* name, const Handler& handler,
                                   std::string_view bytes) {
  Req request;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InternalError(
        absl::StrCat("cannot parse the ", name, " request"));
  }
  Resp response;
  const absl::Status status = handler(request, &response);
  if (!status.ok()) return status;
  return response.SerializeAsString();
}

// A unary method from a handler of parsed messages.
template <typename Req, typename Resp, typename Handler>
h2::UnaryMethod Unary(const char* name, Handler handler) {
  return [name, handler = std::move(handler)](std::string_view bytes) {
    return Answer<Req, Resp>(name, handler, bytes);
  };
}

// The same handler run on `workers`, within the call's deadline less a
// margin (CallScope).
template <typename Req, typename Resp, typename Handler>
h2::AsyncUnaryMethod OffLoop(const char* name, const std::string& resource,
                             h2::CallWorkers& workers, Handler handler) {
  return h2::OnWorkers(workers, absl::StrCat(name, " for \"", resource, "\""),
                       [name, handler = std::move(handler)](
                           std::string_view bytes, std::stop_token stop) {
                         pluginapi::CallScope scope(stop);
                         return Answer<Req, Resp>(name, handler, bytes);
                       });
}

// One ListAndWatch stream: sends the list when its version moved on, ends
// when the list is closed (the server ends it when stopping or when the
// client goes).
class ListSource final : public h2::StreamSource {
 public:
  ListSource(DevicePluginService& service, h2::Server& server)
      : service_(service),
        watcher_(
            service.devices().AddWatcher([&server] { server.WakeStreams(); })) {
    service_.StreamStarted();
  }
  ~ListSource() override { service_.devices().RemoveWatcher(watcher_); }

  h2::StreamStep Next() override {
    DeviceList& devices = service_.devices();
    if (devices.closed()) {
      why_ = "device list closed";
      return {nullptr, absl::OkStatus()};
    }
    pluginapi::DeviceSnapshotPtr snapshot = devices.Snapshot();
    if (snapshot->version == sent_) return {};
    sent_ = snapshot->version;
    return {service_.ListMessage(*snapshot), std::nullopt};
  }

  void Ended(std::string_view why) override {
    service_.StreamEnded(why_ != nullptr ? why_ : why, why_ != nullptr);
  }

 private:
  DevicePluginService& service_;
  const DeviceList::WatcherId watcher_;
  uint64_t sent_ = 0;
  const char* why_ = nullptr;
};

}  // namespace

DevicePluginService::DevicePluginService(const PluginOptions& options,
                                         DeviceList& devices,
                                         const AllocateHandler& allocate,
                                         const PreferredHandler& preferred,
                                         uint64_t run)
    : options_(options),
      devices_(devices),
      allocate_(allocate),
      preferred_(preferred),
      run_(run) {}

h2::Service DevicePluginService::Methods(h2::Server& server,
                                         h2::CallWorkers* workers) {
  h2::Service service;
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(options_.pre_start_required);
  options.set_get_preferred_allocation_available(
      options_.get_preferred_allocation_available);
  service.unary[absl::StrCat(kPrefix, "GetDevicePluginOptions")] =
      [encoded = options.SerializeAsString()](
          std::string_view bytes) -> absl::StatusOr<std::string> {
    if (v1beta1::Empty request;
        !request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return absl::InternalError(
          "cannot parse the GetDevicePluginOptions request");
    }
    return encoded;
  };
  auto preferred = [this](const v1beta1::PreferredAllocationRequest& request,
                          v1beta1::PreferredAllocationResponse* response) {
    const absl::Status status =
        HandlePreferred(options_.resource_name, *devices_.Snapshot(), request,
                        preferred_, response);
    LogOutcome("GetPreferredAllocation", request, status);
    return status;
  };
  auto allocate = [this](const v1beta1::AllocateRequest& request,
                         v1beta1::AllocateResponse* response) {
    const absl::Status status =
        HandleAllocate(options_.resource_name, *devices_.Snapshot(), request,
                       allocate_, response);
    LogOutcome("Allocate", request, status);
    return status;
  };
  using PreferredReq = v1beta1::PreferredAllocationRequest;
  using PreferredResp = v1beta1::PreferredAllocationResponse;
  const std::string preferred_path =
      absl::StrCat(kPrefix, "GetPreferredAllocation");
  const std::string allocate_path = absl::StrCat(kPrefix, "Allocate");
  if (workers != nullptr) {
    service.async_unary[preferred_path] = OffLoop<PreferredReq, PreferredResp>(
        "GetPreferredAllocation", options_.resource_name, *workers,
        std::move(preferred));
    service.async_unary[allocate_path] =
        OffLoop<v1beta1::AllocateRequest, v1beta1::AllocateResponse>(
            "Allocate", options_.resource_name, *workers, std::move(allocate));
  } else {
    service.unary[preferred_path] = Unary<PreferredReq, PreferredResp>(
        "GetPreferredAllocation", std::move(preferred));
    service.unary[allocate_path] =
        Unary<v1beta1::AllocateRequest, v1beta1::AllocateResponse>(
            "Allocate", std::move(allocate));
  }
  service.unary[absl::StrCat(kPrefix, "PreStartContainer")] =
      Unary<v1beta1::PreStartContainerRequest,
            v1beta1::PreStartContainerResponse>(
          "PreStartContainer",
          [](const v1beta1::PreStartContainerRequest&,
             v1beta1::PreStartContainerResponse*) { return absl::OkStatus(); });
  service.streaming[absl::StrCat(kPrefix, "ListAndWatch")] =
      [this, &server](std::string_view bytes)
      -> absl::StatusOr<std::unique_ptr<h2::StreamSource>> {
    if (v1beta1::Empty request;
        !request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return absl::InternalError("cannot parse the ListAndWatch request");
    }
    return std::make_unique<ListSource>(*this, server);
  };
  return service;
}

std::shared_ptr<const std::string> DevicePluginService::ListMessage(
    const pluginapi::DeviceSnapshot& snapshot) {
  if (encoded_ == nullptr || encoded_version_ != snapshot.version) {
    encoded_ =
        std::make_shared<const std::string>(EncodeListAndWatch(snapshot));
    encoded_version_ = snapshot.version;
  }
  return encoded_;
}

void DevicePluginService::StreamStarted() {
  GPULET_LOG(INFO) << "ListAndWatch stream opened for "
                   << options_.resource_name << " (" << ++streams_ << " open)";
}

void DevicePluginService::StreamEnded(std::string_view why, bool list_closed) {
  const int open = --streams_;
  GPULET_LOG(INFO) << "ListAndWatch stream for " << options_.resource_name
                   << " ended: " << why << " (" << open << " open)";
  if (open == 0 && !list_closed && !stopping_.load() && options_.on_unwatched) {
    options_.on_unwatched(run_);
  }
}

}  // namespace gpulet::plugin
