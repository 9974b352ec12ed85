// DraServer: `gpulet dra`'s gRPC face towards the kubelet, on two unix
// sockets, each served by an h2::Server (src/net/h2) of its own:
//  - <registry_dir>/<driver>-reg.sock: plugin registration (GetInfo,
//    NotifyRegistrationStatus). The kubelet's plugin watcher notices the
//    socket, asks GetInfo (type "DRAPlugin", the driver name, the DRA
//    socket, the services "v1.DRAPlugin" and "v1beta1.DRAPlugin") and
//    dials the DRA socket;
//  - <plugin_dir>/dra.sock: the DRA service (v1 and v1beta1:
//    NodePrepareResources, NodeUnprepareResources, answered by a
//    ClaimPreparer) and the DRA health service (v1alpha1
//    NodeWatchResources, streamed from a DeviceHealthBoard).
// Both sockets are 0600 (the kubelet runs as root).
//
// NodePrepareResources and NodeUnprepareResources run on workers of the
// server (kDraWorkers threads, kDraMaxQueued calls waiting), never on the
// DRA socket's loop: a claim read that hangs on the API server holds up
// neither the health streams nor other calls, and ends at the call's
// deadline (the kubelet's, 45 s by default, less a margin) with
// DEADLINE_EXCEEDED naming the claim. The other methods run inline.
//
// Lifecycle: Start() removes stale sockets, listens and serves; Stop() ends
// the health streams, stops both servers and the workers (claim reads in
// flight are stopped) and removes both sockets. It can
// start again after Stop().
//
// Thread safety: Start/Stop from one controlling thread; the accessors from
// any. The preparer and the board must outlive the server.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "src/dra/kubelet/claim_preparer.h"
#include "src/dra/kubelet/device_health.h"

namespace gpulet::dra {

struct DraServerOptions {
  std::string driver;        // kDriverName
  std::string pool;          // the node name: health reports' pool
  std::string registry_dir;  // "/var/lib/kubelet/plugins_registry"
  std::string plugin_dir;    // "/var/lib/kubelet/plugins/<driver>"
  // Called with each registration verdict the kubelet sends (true: it
  // registered the plugin; else the kubelet's error). May be empty.
  std::function<void(bool registered, const std::string& error)>
      on_registration = {};
};

// "<driver>-reg.sock" and "dra.sock".
std::string RegistrationSocketName(const std::string& driver);
inline constexpr char kDraSocketName[] = "dra.sock";

class DraServer {
 public:
  DraServer(DraServerOptions options, ClaimPreparer& preparer,
            DeviceHealthBoard& health);
  ~DraServer();
  DraServer(const DraServer&) = delete;
  DraServer& operator=(const DraServer&) = delete;

  // Errors name the path: InvalidArgument for a path too long for a unix
  // socket, NotFound for a missing directory, FailedPrecondition when a
  // non-socket sits at a path or the server already runs, Unavailable when
  // it cannot listen.
  absl::Status Start();
  void Stop();
  bool running() const;

  std::string registration_socket() const;
  std::string dra_socket() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpulet::dra
