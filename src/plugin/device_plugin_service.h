// DevicePluginService: the v1beta1.DevicePlugin gRPC service of one
// resource, for one run of a PluginServer (a new one is made per Start, so
// a stopped service never serves again).
//
// It uses gRPC's async API with one completion queue and one thread of its
// own that waits on the queue without a deadline, so an idle plugin wakes
// for nothing: an open ListAndWatch stream holds no thread and polls
// nothing (list_and_watch_call.h). (gRPC 1.51's sync server threads wake
// every 10 s and a sync stream cannot see a cancel without polling; its
// callback API runs on threads that wake every second.) The unary methods
// run on the queue thread: they only compute an answer from a snapshot, and
// the handlers must not block.
//
// Use: AddTo(builder), build and start the server, Start(); to stop:
// Stop() (ends every stream at once), shut the server down, Shutdown(),
// destroy the server, then the service.
//
// Thread safety: AddTo, Start and Shutdown from the controlling thread;
// Stop from any. Borrows the options, device list and handlers, which must
// outlive it.
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "src/plugin/async_call.h"
#include "src/plugin/device_list.h"
#include "src/plugin/plugin_server.h"
#include "src/pluginapi/handlers.h"

namespace grpc {
class ServerBuilder;
}

namespace gpulet::plugin {

// The service as gRPC sees it: the unary methods async, ListAndWatch raw
// (grpc::ByteBuffer), so every stream sends the bytes EncodeListAndWatch
// made once per version of the list.
using AsyncDevicePlugin = v1beta1::DevicePlugin::WithAsyncMethod_GetDevicePluginOptions<
    v1beta1::DevicePlugin::WithRawMethod_ListAndWatch<
        v1beta1::DevicePlugin::WithAsyncMethod_GetPreferredAllocation<
            v1beta1::DevicePlugin::WithAsyncMethod_Allocate<
                v1beta1::DevicePlugin::WithAsyncMethod_PreStartContainer<
                    v1beta1::DevicePlugin::Service>>>>>;

class DevicePluginService {
 public:
  DevicePluginService(const PluginOptions& options, DeviceList& devices,
                      const pluginapi::AllocateHandler& allocate,
                      const pluginapi::PreferredHandler& preferred);
  // REQUIRES: Shutdown() was called if AddTo() was.
  ~DevicePluginService();
  DevicePluginService(const DevicePluginService&) = delete;
  DevicePluginService& operator=(const DevicePluginService&) = delete;

  // Registers the service and its completion queue with `builder`.
  void AddTo(grpc::ServerBuilder& builder);
  // Once the server started: asks gRPC for the first call of every method
  // and starts the queue thread.
  void Start();
  // Ends every ListAndWatch stream; later streams end at once.
  void Stop();
  // Once the server was shut down: shuts the queue down, waits for the
  // thread to drain it and destroys every call left.
  void Shutdown();

  // For the calls (queue thread): whether the service is stopping; a new
  // stream started (the next one is requested); a stream ended.
  bool stopping() const { return stopping_; }
  void StreamStarted();
  void StreamEnded(const char* why);
  // Owns `call` and starts it (Request()). Queue thread, or before Start.
  void Add(std::unique_ptr<AsyncCall> call);
  // Runs `start`, which begins one operation on the queue (a request, a
  // write, a finish), unless Shutdown() has shut the queue down: gRPC
  // forbids new work on a queue after its Shutdown, and a completion
  // drained after it (a write that failed as the server stopped, a client
  // that came as it stopped) would otherwise start one. Returns whether
  // `start` ran; a call whose operation did not start is destroyed by
  // Shutdown with the others. Any thread.
  bool StartOperation(absl::FunctionRef<void()> start);
  // The ListAndWatch message of `snapshot`, encoded once per version and
  // shared by every stream (the buffer references the same bytes). Any
  // thread.
  grpc::ByteBuffer ListMessage(const pluginapi::DeviceSnapshot& snapshot)
      ABSL_LOCKS_EXCLUDED(encoded_mu_);

 private:
  void Run();
  void RequestUnaryCalls();

  const PluginOptions& options_;
  DeviceList& devices_;
  const pluginapi::AllocateHandler& allocate_;
  const pluginapi::PreferredHandler& preferred_;
  AsyncDevicePlugin async_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  // Touched by the controlling thread before the queue thread starts and
  // after it ended, and by the queue thread in between.
  absl::flat_hash_map<AsyncCall*, std::unique_ptr<AsyncCall>> calls_;
  std::atomic<bool> stopping_{false};
  // Held shared while an operation starts, exclusively to close the queue.
  absl::Mutex queue_mu_;
  bool queue_closed_ ABSL_GUARDED_BY(queue_mu_) = false;
  std::atomic<int> streams_{0};
  absl::Mutex encoded_mu_;
  uint64_t encoded_version_ ABSL_GUARDED_BY(encoded_mu_) = 0;  // none yet
  grpc::Slice encoded_ ABSL_GUARDED_BY(encoded_mu_);
  // Last: joined first.
  std::jthread thread_;
};

}  // namespace gpulet::plugin
