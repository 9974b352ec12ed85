// PluginServer: one kubelet device plugin (API v1beta1) for one resource,
// served as gRPC on a unix socket in the kubelet's plugin directory, over
// gpulet's own HTTP/2 transport (src/net/h2).
//
// Lifecycle: Start() removes a stale socket file, listens on
// <plugin_dir>/<socket_name> (mode 0600) and serves the DevicePlugin service
// on a thread of its own; only then may the caller register with the kubelet.
// Stop() ends every ListAndWatch stream (status OK), sends GOAWAY, closes the
// connections and removes the socket. A PluginServer can be started again after
// Stop() (kubelet restart).
//
// The server reads devices from a DeviceList it does not own (the daemon
// owns it, the health monitor writes to it) and answers Allocate through an
// AllocateHandler, so response strategies live outside the transport.
// Handlers that wait on the network run off the loop (handlers_wait), so
// ListAndWatch and the other calls are never held up by them.
//
// Thread safety: Start/Stop from one controlling thread; running() and the
// accessors from any thread; the transport is internal. The DeviceList must
// outlive the server; the handlers are owned by it and are called on the
// server's loop thread or (handlers_wait) on its workers, concurrently,
// while other threads change the DeviceList.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "src/model/pluginapi/handlers.h"
#include "src/plugin/server/device_list.h"

namespace gpulet::plugin {

struct PluginOptions {
  std::string resource_name;  // "nvidia.com/gpu"
  std::string socket_name;    // "gpulet-gpu.sock", relative to the plugin dir
  bool get_preferred_allocation_available = true;
  bool pre_start_required = false;
  // Called after each container's devices were allocated successfully (the
  // AllocateHandler returned a response), with how many IDs it was given;
  // the daemon counts gpulet_allocations_total and
  // gpulet_allocated_devices_total with it. Empty: nothing is called.
  // Called on the thread that answered: must be thread-safe and quick.
  std::function<void(size_t devices)> on_allocated = {};
  // The handlers wait on the network (the memory-unit resource's read and
  // write the Node): GetPreferredAllocation and Allocate run on workers of
  // the server (kWorkers threads, kMaxQueued calls waiting), never on its
  // loop, each within its call's deadline less a margin, which
  // pluginapi::CurrentCallStop() (call_scope.h) gives them. False: they
  // run inline on the loop and must not block.
  bool handlers_wait = false;
  // Called when the last open ListAndWatch stream of run `run` (run())
  // ended by the client's doing (cancelled, its connection closed, its
  // deadline passed) while the server keeps serving: whoever registered
  // the resource no longer watches it. The kubelet does that to a plugin
  // it has just registered when an older client's stream of the same
  // resource ends late (kubelet's device manager keeps one client per
  // resource name and its old client's goroutine disconnects whichever
  // client is registered when it finishes); only a new registration brings
  // the devices back. Never called for streams the server ends (Stop, the
  // device list closed). Called on the server's loop thread: must be
  // thread-safe and quick. Empty: nothing is called.
  std::function<void(uint64_t run)> on_unwatched = {};
};

class PluginServer {
 public:
  PluginServer(PluginOptions options, DeviceList& devices,
               pluginapi::AllocateHandler allocate,
               pluginapi::PreferredHandler preferred);
  ~PluginServer();
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;

  // Serves on <plugin_dir>/<socket_name>. Errors name the path:
  // FAILED_PRECONDITION when already running or when something that is not
  // a socket sits at the path, INVALID_ARGUMENT for an empty or nested
  // socket name or a path longer than a unix socket allows, NOT_FOUND when
  // plugin_dir is missing, UNAVAILABLE when it cannot listen.
  absl::Status Start(const std::string& plugin_dir);
  // Ends every ListAndWatch stream, sends GOAWAY (connections get up to a
  // second to take it; a call still on the workers is answered
  // UNAVAILABLE), closes them, stops the workers (their API calls are
  // stopped) and removes the socket file. Returns when nothing of this run
  // is left. No-op when not running.
  void Stop();
  bool running() const;
  const PluginOptions& options() const;
  // Which run of the server this is: 1 after the first successful
  // Start(), one more after each; kept after Stop(). on_unwatched names
  // the run whose streams ended, so a late call about an old run can be
  // told apart.
  uint64_t run() const;
  // ListAndWatch streams open now (0 when not running); any thread.
  int open_streams() const;
  // Full path of the socket, set by Start() and kept after Stop().
  // REQUIRES: not called concurrently with Start().
  const std::string& socket_path() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpulet::plugin
