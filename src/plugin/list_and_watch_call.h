// ListAndWatchCall: one ListAndWatch stream of a DevicePluginService, on
// gRPC's async API. Nothing waits for it and nothing polls it: it acts when
// the DeviceList calls its watcher (a change, Close, or the service
// stopping), when a write completes, and when gRPC reports the call done
// (AsyncNotifyWhenDone: the client cancelled or went away).
//
// Every message is the full list (the kubelet replaces its view with it); a
// burst of changes while a write is in flight collapses into one message
// with the latest list. The stream ends when the client goes away, when the
// service stops or when the list is closed.
//
// Thread safety: Poke (the watcher) runs on any thread, concurrently with
// Proceed on the queue thread; at most one write or finish is in flight.
// Borrows the service, the async service, the queue and the list.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "src/plugin/async_call.h"
#include "src/plugin/device_plugin_service.h"
#include "src/plugin/device_list.h"

namespace gpulet::plugin {

class ListAndWatchCall final : public AsyncCall {
 public:
  ListAndWatchCall(DevicePluginService& service,
                   AsyncDevicePlugin& async,
                   grpc::ServerCompletionQueue& cq, DeviceList& devices);
  // Stops watching the list; logs the end of a stream that started.
  ~ListAndWatchCall() override;

  void Request() override;
  bool Proceed(int op, bool ok) override;
  // Writes the latest list if it is newer than the last one sent and no
  // write is in flight; ends the stream if it should end.
  void Poke() { Step(nullptr); }

 private:
  enum Op { kRequest, kWrite, kFinish, kDone };

  // Advances the stream; `end` (or null) is a reason to end it.
  void Step(const char* end);
  // Nothing of the call is pending: it may be destroyed.
  bool Over();

  DevicePluginService& service_;
  AsyncDevicePlugin& async_;
  grpc::ServerCompletionQueue& cq_;
  DeviceList& devices_;
  grpc::ServerContext context_;
  grpc::ByteBuffer request_;  // an Empty, unread
  grpc::ServerAsyncWriter<grpc::ByteBuffer> writer_{&context_};
  AsyncTag request_tag_{this, kRequest};
  AsyncTag write_tag_{this, kWrite};
  AsyncTag finish_tag_{this, kFinish};
  AsyncTag done_tag_{this, kDone};
  // Queue thread only.
  std::optional<DeviceList::WatcherId> watcher_;

  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;  // gRPC matched a client
  bool done_ ABSL_GUARDED_BY(mu_) = false;     // gRPC reported it done
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;  // Finish started
  bool finished_ ABSL_GUARDED_BY(mu_) = false;   // and completed
  // Why the stream ends; null while it goes on.
  const char* why_ ABSL_GUARDED_BY(mu_) = nullptr;
  uint64_t sent_ ABSL_GUARDED_BY(mu_) = 0;  // version of the last list sent
  // The message of the write in flight (DevicePluginService::ListMessage):
  // filled by whoever set writing_, read by gRPC until the write completes.
  grpc::ByteBuffer message_;
};

}  // namespace gpulet::plugin
