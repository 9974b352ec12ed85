// The request handling of the DevicePlugin service, apart from the
// transport's thread and sockets: validation of Allocate and
// GetPreferredAllocation requests against a device snapshot, the call into the
// policy handler, and the conversion of snapshots into ListAndWatch messages.
// The server and the plugin_request_fuzz target run exactly this code.
//
// Thread safety: pure functions (the handlers they call must be safe to run
// concurrently).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "src/model/pluginapi/device.h"
#include "src/model/pluginapi/handlers.h"

namespace gpulet::plugin {

inline constexpr char kHealthy[] = "Healthy";
inline constexpr char kUnhealthy[] = "Unhealthy";

// One ContainerAllocateResponse per ContainerAllocateRequest, in order.
// INVALID_ARGUMENT `invalid allocation request for "<resource>": <reason>`
// when a container request has no IDs or names an ID missing from the
// snapshot (NVIDIA's "invalid request: unknown device: <id>"). A handler
// error keeps its code and gets the same prefix when INVALID_ARGUMENT,
// `allocation for "<resource>": ` otherwise. `response` is cleared
// first; on error its contents are unspecified.
absl::Status HandleAllocate(const std::string& resource_name,
                            const pluginapi::DeviceSnapshot& snapshot,
                            const v1beta1::AllocateRequest& request,
                            const pluginapi::AllocateHandler& handler,
                            v1beta1::AllocateResponse* response);

// One ContainerPreferredAllocationResponse per container request, in order.
// Requests are checked by ValidatePreferred (INVALID_ARGUMENT
// `invalid preferred allocation request for "<resource>": <reason>`), the
// handler's answer by CheckPreferredAnswer (INTERNAL); a handler's error
// keeps its code, with that prefix when INVALID_ARGUMENT and
// `preferred allocation for "<resource>": ` otherwise.
absl::Status HandlePreferred(const std::string& resource_name,
                             const pluginapi::DeviceSnapshot& snapshot,
                             const v1beta1::PreferredAllocationRequest& request,
                             const pluginapi::PreferredHandler& handler,
                             v1beta1::PreferredAllocationResponse* response);

// The full device list as the kubelet sees it: every device with its ID,
// "Healthy"/"Unhealthy" and NUMA nodes (no topology when it has none).
v1beta1::ListAndWatchResponse ToListAndWatchResponse(
    const pluginapi::DeviceSnapshot& snapshot);

}  // namespace gpulet::plugin
