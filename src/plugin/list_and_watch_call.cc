#include "src/plugin/list_and_watch_call.h"

#include "src/plugin/device_plugin_service.h"

namespace gpulet::plugin {

ListAndWatchCall::ListAndWatchCall(DevicePluginService& service,
                                   AsyncDevicePlugin& async,
                                   grpc::ServerCompletionQueue& cq,
                                   DeviceList& devices)
    : service_(service), async_(async), cq_(cq), devices_(devices) {}

ListAndWatchCall::~ListAndWatchCall() {
  // Waits for a watcher call in progress, which may still look at us.
  if (watcher_.has_value()) devices_.RemoveWatcher(*watcher_);
  absl::MutexLock lock(&mu_);
  if (started_) service_.StreamEnded(why_ != nullptr ? why_ : "server shut down");
}

void ListAndWatchCall::Request() {
  // Before the request: gRPC delivers done_tag_ once the started call is
  // over, cancelled or not (never for a call that does not start).
  context_.AsyncNotifyWhenDone(&done_tag_);
  async_.RequestListAndWatch(&context_, &request_, &writer_, &cq_, &cq_,
                             &request_tag_);
}

bool ListAndWatchCall::Proceed(int op, bool ok) {
  switch (op) {
    case kRequest:
      // Not ok: the server shuts down before a client came; the service
      // destroys the call with its queue.
      if (!ok) return false;
      service_.StreamStarted();
      {
        absl::MutexLock lock(&mu_);
        started_ = true;
      }
      watcher_ = devices_.AddWatcher([this] { Poke(); });
      Step(nullptr);
      return false;
    case kWrite:
      {
        absl::MutexLock lock(&mu_);
        writing_ = false;
      }
      Step(ok ? nullptr : "write failed, client gone");
      return Over();
    case kFinish:
      {
        absl::MutexLock lock(&mu_);
        finished_ = true;
      }
      return Over();
    case kDone:
      {
        absl::MutexLock lock(&mu_);
        done_ = true;
      }
      // IsCancelled may only be asked once the done tag is delivered.
      Step(context_.IsCancelled() ? "client cancelled" : nullptr);
      return Over();
    default:
      return false;
  }
}

void ListAndWatchCall::Step(const char* end) {
  bool write = false;
  {
    absl::MutexLock lock(&mu_);
    if (!started_) return;
    if (why_ == nullptr) {
      if (end != nullptr) {
        why_ = end;
      } else if (service_.stopping()) {
        why_ = "server stopping";
      } else if (devices_.closed()) {
        why_ = "device list closed";
      }
    }
    // A write in flight completes first: its completion steps again.
    if (finishing_ || writing_) return;
    if (why_ != nullptr) {
      finishing_ = true;
    } else {
      pluginapi::DeviceSnapshotPtr snapshot = devices_.Snapshot();
      if (snapshot->version == sent_) return;
      sent_ = snapshot->version;
      message_ = service_.ListMessage(*snapshot);
      writing_ = true;
      write = true;
    }
  }
  // The flags above let only one thread start an operation; starting it
  // outside the lock keeps gRPC's own locks out of ours.
  service_.StartOperation([&] {
    if (write) {
      writer_.Write(message_, &write_tag_);
    } else {
      writer_.Finish(grpc::Status::OK, &finish_tag_);
    }
  });
}

bool ListAndWatchCall::Over() {
  absl::MutexLock lock(&mu_);
  return started_ && done_ && !writing_ && finishing_ == finished_;
}

}  // namespace gpulet::plugin
