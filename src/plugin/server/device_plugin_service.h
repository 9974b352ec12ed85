// DevicePluginService: the v1beta1.DevicePlugin methods of one resource as
// an h2::Service, for one run of a PluginServer (a new one per Start).
//
// The unary methods run inline on the h2 server's loop thread and only
// compute an answer from a snapshot, except GetPreferredAllocation and
// Allocate of a resource whose handlers wait on the network
// (PluginOptions::handlers_wait): those are asynchronous methods whose
// work runs on the CallWorkers given, within the call's deadline less a
// margin (a pluginapi::CallScope carries its stop token to the handlers),
// and a call the workers cannot take (all busy, kMaxQueued waiting) is
// UNAVAILABLE. GetDevicePluginOptions answers bytes encoded once. Each
// ListAndWatch stream watches the DeviceList: a change, Close or Notify wakes
// the server's streams, and a stream sends the latest list when its version is
// newer than the last one it sent (a burst collapses into one message). The
// message is encoded once per version and shared by every stream. A request
// that does not parse is INTERNAL, as gRPC answers it.
//
// Thread safety: Methods() once, before the server starts; the methods and
// the streams run on the server's loop thread, the waiting handlers on the
// workers. Borrows the options,
// device list and handlers, which must outlive it, and the server, which
// must outlive every stream.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "src/model/pluginapi/handlers.h"
#include "src/net/h2/call_workers.h"
#include "src/net/h2/server.h"
#include "src/net/h2/service.h"
#include "src/plugin/server/device_list.h"
#include "src/plugin/server/plugin_server.h"

namespace gpulet::plugin {

// The workers of a resource whose handlers wait (PluginOptions): the
// kubelet admits pods one at a time, so two threads are plenty, and a
// short queue is enough to ride out a burst.
inline constexpr int kWorkers = 2;
inline constexpr size_t kMaxQueued = 16;

class DevicePluginService {
 public:
  DevicePluginService(const PluginOptions& options, DeviceList& devices,
                      const pluginapi::AllocateHandler& allocate,
                      const pluginapi::PreferredHandler& preferred,
                      uint64_t run);
  DevicePluginService(const DevicePluginService&) = delete;
  DevicePluginService& operator=(const DevicePluginService&) = delete;

  // The five methods by path; they borrow this object, `server`, whose
  // streams a change of the list wakes, and `workers` (null unless
  // handlers_wait), which must be stopped before this object goes.
  h2::Service Methods(h2::Server& server, h2::CallWorkers* workers);

  // For the streams (loop thread): the list's message for `snapshot`,
  // encoded once per version; stream counting for the log and for
  // PluginOptions::on_unwatched.
  std::shared_ptr<const std::string> ListMessage(
      const pluginapi::DeviceSnapshot& snapshot);
  void StreamStarted();
  // `list_closed`: the stream ended because the device list was closed.
  void StreamEnded(std::string_view why, bool list_closed);
  // The server is about to end every stream (any thread): streams ending
  // from now on are the server's doing, not the client's.
  void Stopping() { stopping_.store(true); }
  DeviceList& devices() { return devices_; }
  // Streams open now; any thread.
  int open_streams() const { return streams_.load(); }

 private:
  const PluginOptions& options_;
  DeviceList& devices_;
  const pluginapi::AllocateHandler& allocate_;
  const pluginapi::PreferredHandler& preferred_;
  const uint64_t run_;
  std::atomic<bool> stopping_ = false;
  // Changed on the loop thread, read from any.
  std::atomic<int> streams_ = 0;
  uint64_t encoded_version_ = 0;  // none yet
  std::shared_ptr<const std::string> encoded_;
};

}  // namespace gpulet::plugin
