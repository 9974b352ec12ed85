// The node's devices under their DRA names, and health reports mapped onto
// them: what the daemon feeds the DeviceHealthBoard with, from discovery
// and from the health monitor's events (given here as plain values, since
// `health` sits on the same layer row).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/dra/kubelet/device_health.h"
#include "src/gpu/device/gpu.h"

namespace gpulet::dra {

// The DRA name of a MIG device ("gpu-1-mig-19-6-1"); empty when discovery
// could not read its GPU instance's placement.
std::string MigDraName(const device::MigDevice& mig);

// Every device of the node's pool: "gpu-<i>" for a GPU not in MIG mode, the
// MIG devices' names for one in MIG mode.
std::vector<std::string> NodeDeviceNames(const device::Node& node);

// What one health decision means for the pool's devices: a whole-GPU event
// (no gpu_instance_id) covers the GPU and each of its MIG devices; a MIG
// event the MIG devices of that GPU instance only. Unknown GPUs give none.
// An unhealthy device carries `fault`; a healthy one none.
std::vector<DeviceHealth> HealthOfEvent(const device::Node& node, int gpu_index,
                                        std::optional<unsigned> gpu_instance_id,
                                        bool healthy, const std::string& reason,
                                        int64_t now_unix,
                                        DeviceFault fault = {});

}  // namespace gpulet::dra
