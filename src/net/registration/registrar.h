// Registration with the kubelet: the v1beta1.Registration/Register call on
// the kubelet's socket, made with h2's unary client (a connection per
// attempt). Synchronous: inside Register the kubelet dials the
// plugin's socket and calls GetDevicePluginOptions, so the plugin must
// already be serving.
//
// Thread safety: stateless functions.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gpulet::registration {

struct RegisterParams {
  std::string kubelet_socket;  // full path of kubelet.sock
  std::string endpoint;        // plugin socket file name, relative to its dir
  std::string resource_name;
  bool get_preferred_allocation_available = true;
  bool pre_start_required = false;
};

// Asked about every 50 ms while Register waits for the kubelet (and once
// before it starts); true abandons the call. Lets a stop request end a
// registration that a stuck kubelet would hold for the whole timeout.
using CancelCheck = std::function<bool()>;

// Registers once. Errors carry the gRPC code and the kubelet's message, with
// the resource name, e.g. "register nvidia.com/gpu with
// /var/lib/kubelet/device-plugins/kubelet.sock: UNAVAILABLE: ...";
// CANCELLED when `cancelled` said so.
absl::Status Register(const RegisterParams& params, absl::Duration timeout,
                      const CancelCheck& cancelled = nullptr);

}  // namespace gpulet::registration
