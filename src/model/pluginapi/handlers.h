// The two policy seams of a PluginServer: how an Allocate answer is built
// (device-list strategy) and how a preferred allocation is chosen (topology
// policy). Kept apart from the gRPC server so policies are plain functions
// over values that are table-tested without a socket.
//
// Thread safety: handlers are called from the plugin server's loop thread
// and, for a resource whose handlers wait on the network (the memory units,
// PluginOptions::handlers_wait), concurrently from its worker threads: they
// must be safe for that (pure functions are). A handler that runs on the
// loop must not block; one that waits gives up when CurrentCallStop()
// (call_scope.h) is requested.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/model/pluginapi/device.h"

namespace v1beta1 {
class ContainerAllocateResponse;
}

namespace gpulet::pluginapi {

// Builds the response for one container given IDs that are all known
// devices of the snapshot (the server checks that first; duplicates are
// passed through). An error is sent to the kubelet with the Status's own
// code (INVALID_ARGUMENT for a bad request) and its message after
// `invalid allocation request for "<resource>": `.
using AllocateHandler =
    std::function<absl::StatusOr<v1beta1::ContainerAllocateResponse>(
        const DeviceSnapshot& snapshot, const std::vector<std::string>& ids)>;

// Chooses `size` devices from `available` containing all of `must_include`.
// The server validates the request first (HandlePreferred): every ID is a
// known device, duplicates are removed, must_include is within available and
// must_include.size() <= size <= available.size(), 1 <= size. It also checks
// the answer: exactly `size` distinct IDs from available, all of
// must_include among them.
using PreferredHandler = std::function<absl::StatusOr<std::vector<std::string>>(
    const DeviceSnapshot& snapshot, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size)>;

}  // namespace gpulet::pluginapi
