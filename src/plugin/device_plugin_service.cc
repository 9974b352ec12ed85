#include "src/plugin/device_plugin_service.h"

#include <grpcpp/server_builder.h>

#include <functional>
#include <utility>

#include "src/common/logging.h"
#include "src/plugin/list_and_watch_call.h"
#include "src/plugin/list_encoding.h"
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

// One unary call: requested, answered at once on the queue thread, done
// when the answer is sent. A started call requests the next one first.
template <typename Req, typename Resp>
class UnaryCall final : public AsyncCall {
 public:
  using RequestMethod = void (AsyncDevicePlugin::*)(
      grpc::ServerContext*, Req*,
      grpc::ServerAsyncResponseWriter<Resp>*, grpc::CompletionQueue*,
      grpc::ServerCompletionQueue*, void*);
  using Handler = std::function<grpc::Status(const Req&, Resp*)>;

  UnaryCall(DevicePluginService& service,
            AsyncDevicePlugin& async,
            grpc::ServerCompletionQueue& cq, RequestMethod method,
            Handler handler)
      : service_(service),
        async_(async),
        cq_(cq),
        method_(method),
        handler_(std::move(handler)) {}

  void Request() override {
    (async_.*method_)(&context_, &request_, &responder_, &cq_, &cq_,
                      &request_tag_);
  }

  bool Proceed(int op, bool ok) override {
    if (op != kRequest) return true;  // the answer went out (or could not)
    if (!ok) return true;             // shutting down; never started
    service_.Add(std::make_unique<UnaryCall>(service_, async_, cq_, method_,
                                             handler_));
    const grpc::Status status = handler_(request_, &response_);
    service_.StartOperation(
        [&] { responder_.Finish(response_, status, &finish_tag_); });
    return false;
  }

 private:
  enum Op { kRequest, kFinish };

  DevicePluginService& service_;
  AsyncDevicePlugin& async_;
  grpc::ServerCompletionQueue& cq_;
  const RequestMethod method_;
  const Handler handler_;
  grpc::ServerContext context_;
  Req request_;
  Resp response_;
  grpc::ServerAsyncResponseWriter<Resp> responder_{&context_};
  AsyncTag request_tag_{this, kRequest};
  AsyncTag finish_tag_{this, kFinish};
};

template <typename Req, typename Resp>
std::unique_ptr<AsyncCall> MakeUnary(
    DevicePluginService& service, AsyncDevicePlugin& async,
    grpc::ServerCompletionQueue& cq,
    typename UnaryCall<Req, Resp>::RequestMethod method,
    typename UnaryCall<Req, Resp>::Handler handler) {
  return std::make_unique<UnaryCall<Req, Resp>>(
      service, async, cq, method, std::move(handler));
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

DevicePluginService::~DevicePluginService() = default;

void DevicePluginService::AddTo(grpc::ServerBuilder& builder) {
  builder.RegisterService(&async_);
  cq_ = builder.AddCompletionQueue();
}

void DevicePluginService::Start() {
  Add(std::make_unique<ListAndWatchCall>(*this, async_, *cq_, devices_));
  RequestUnaryCalls();
  thread_ = std::jthread([this] { Run(); });
}

void DevicePluginService::RequestUnaryCalls() {
  using Service = AsyncDevicePlugin;
  Add(MakeUnary<v1beta1::Empty, v1beta1::DevicePluginOptions>(
      *this, async_, *cq_, &Service::RequestGetDevicePluginOptions,
      [this](const v1beta1::Empty&, v1beta1::DevicePluginOptions* response) {
        response->set_pre_start_required(options_.pre_start_required);
        response->set_get_preferred_allocation_available(
            options_.get_preferred_allocation_available);
        return grpc::Status::OK;
      }));
  Add(MakeUnary<v1beta1::PreferredAllocationRequest,
                v1beta1::PreferredAllocationResponse>(
      *this, async_, *cq_, &Service::RequestGetPreferredAllocation,
      [this](const v1beta1::PreferredAllocationRequest& request,
             v1beta1::PreferredAllocationResponse* response) {
        grpc::Status status =
            HandlePreferred(options_.resource_name, *devices_.Snapshot(),
                            request, preferred_, response);
        LogOutcome("GetPreferredAllocation", request, status);
        return status;
      }));
  Add(MakeUnary<v1beta1::AllocateRequest, v1beta1::AllocateResponse>(
      *this, async_, *cq_, &Service::RequestAllocate,
      [this](const v1beta1::AllocateRequest& request,
             v1beta1::AllocateResponse* response) {
        grpc::Status status =
            HandleAllocate(options_.resource_name, *devices_.Snapshot(),
                           request, allocate_, response);
        LogOutcome("Allocate", request, status);
        return status;
      }));
  Add(MakeUnary<v1beta1::PreStartContainerRequest,
                v1beta1::PreStartContainerResponse>(
      *this, async_, *cq_, &Service::RequestPreStartContainer,
      [](const v1beta1::PreStartContainerRequest&,
         v1beta1::PreStartContainerResponse*) { return grpc::Status::OK; }));
}

void DevicePluginService::Stop() {
  stopping_ = true;
  // Every stream watches the list: this makes each one look at stopping_.
  devices_.NotifyWatchers();
}

void DevicePluginService::Shutdown() {
  if (cq_ == nullptr) return;
  {
    absl::WriterMutexLock lock(&queue_mu_);
    queue_closed_ = true;
  }
  cq_->Shutdown();
  if (thread_.joinable()) {
    thread_.join();
  } else {
    void* tag;
    bool ok;
    while (cq_->Next(&tag, &ok)) {
    }
  }
  calls_.clear();
}

void DevicePluginService::Add(std::unique_ptr<AsyncCall> call) {
  AsyncCall* raw = call.get();
  calls_.emplace(raw, std::move(call));
  StartOperation([raw] { raw->Request(); });
}

bool DevicePluginService::StartOperation(absl::FunctionRef<void()> start) {
  absl::ReaderMutexLock lock(&queue_mu_);
  if (queue_closed_) return false;
  start();
  return true;
}

grpc::ByteBuffer DevicePluginService::ListMessage(
    const pluginapi::DeviceSnapshot& snapshot) {
  absl::MutexLock lock(&encoded_mu_);
  if (encoded_version_ != snapshot.version) {
    encoded_ = grpc::Slice(EncodeListAndWatch(snapshot));
    encoded_version_ = snapshot.version;
  }
  return grpc::ByteBuffer(&encoded_, 1);
}

void DevicePluginService::StreamStarted() {
  Add(std::make_unique<ListAndWatchCall>(*this, async_, *cq_, devices_));
  GPULET_LOG(INFO) << "ListAndWatch stream opened for "
                   << options_.resource_name << " (" << ++streams_
                   << " open)";
}

void DevicePluginService::StreamEnded(const char* why) {
  GPULET_LOG(INFO) << "ListAndWatch stream for " << options_.resource_name
                   << " ended: " << why << " (" << --streams_ << " open)";
}

void DevicePluginService::Run() {
  void* tag = nullptr;
  bool ok = false;
  // No deadline: the thread sleeps until gRPC has something for it, and
  // Next returns false once the queue is shut down and drained.
  while (cq_->Next(&tag, &ok)) {
    const AsyncTag* done = static_cast<const AsyncTag*>(tag);
    if (done->call->Proceed(done->op, ok)) calls_.erase(done->call);
  }
}

}  // namespace gpulet::plugin
