// The Allocate answer for one container, built exactly as NVIDIA's
// k8s-device-plugin builds it (internal/plugin/server.go getAllocateResponse)
// for every device-list strategy and their combinations, so container
// runtimes configured for NVIDIA's plugin keep working.
//
// In NVIDIA's order:
//  1. Any CDI strategy: the CDI device names -- one "<vendor>/<class>=<id>"
//     per distinct visible ID, then "<vendor>/imex-channel=<n>" per IMEX
//     channel, then the additional devices (gdrcopy/gds/mofed "=all") --
//     go into one annotation (cdi-annotations) and/or cdi_devices (cdi-cri).
//  2. MPS (mps_root set): CUDA_MPS_PIPE_DIRECTORY and the pipe and /dev/shm
//     mounts, at NVIDIA's container paths (/mps/<resource>/pipe, /dev/shm);
//     their host sources are the directories of the control daemon gpulet
//     runs for the requested replica's GPU (mps_paths.h), where NVIDIA
//     mounts one daemon per resource (<mps_root>/<resource>/pipe and
//     <mps_root>/shm).
//  3. If every strategy is a CDI one, stop here: no NVIDIA_VISIBLE_DEVICES,
//     no device specs, no NVIDIA_GDS/MOFED/GDRCOPY envs.
//  4. envvar: NVIDIA_VISIBLE_DEVICES=<distinct visible IDs, comma-joined>
//     and NVIDIA_IMEX_CHANNELS=<channels> when there are any.
//  5. volume-mounts: NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices
//     (overriding envvar's), one /dev/null mount per distinct visible ID at
//     /var/run/nvidia-container-devices/<id>, then one per IMEX channel at
//     /var/run/nvidia-container-devices/imex/<n>.
//  6. pass_device_specs: the present control nodes, each requested
//     device's own nodes, the IMEX channel nodes; host path = dev root +
//     path, permissions "rw".
//  7. NVIDIA_GDRCOPY, NVIDIA_GDS, NVIDIA_MOFED = "enabled" when set.
//
// Where gpulet differs on purpose: the annotation key's ID is deterministic
// (allocate_cdi.h AllocationUid) instead of random; device IDs keep request
// order under the index strategy and device specs keep request order and
// are deduplicated (NVIDIA iterates a Go map, so both orders are random,
// and replicas or MIG siblings of one GPU repeat its /dev/nvidia<minor>).
//
// Thread safety: pure functions; the handler from MakeAllocateHandler is
// immutable and safe to call from many threads.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "src/model/allocation/allocate_cdi.h"
#include "src/model/pluginapi/device.h"
#include "src/model/pluginapi/handlers.h"

namespace gpulet::allocation {

inline constexpr char kVisibleDevicesEnv[] = "NVIDIA_VISIBLE_DEVICES";
inline constexpr char kImexChannelsEnv[] = "NVIDIA_IMEX_CHANNELS";
inline constexpr char kVolumeMountsRoot[] = "/var/run/nvidia-container-devices";
inline constexpr char kVolumeMountsHostPath[] = "/dev/null";
// Where the MPS root is mounted in NVIDIA's plugin and control daemon.
inline constexpr char kMpsContainerRoot[] = "/mps";

// flags.plugin.deviceListStrategy values (config's enum maps one to one).
enum class DeviceListStrategy {
  kEnvvar,
  kVolumeMounts,
  kCdiAnnotations,
  kCdiCri
};

struct AllocateOptions {
  // A set; order does not matter. Must not be empty.
  std::vector<DeviceListStrategy> strategies = {DeviceListStrategy::kEnvvar};
  // The advertised resource ("nvidia.com/gpu", "nvidia.com/gpu.shared"):
  // part of the CDI annotation ID and of the MPS directories.
  std::string resource_name = "nvidia.com/gpu";

  // flags.plugin.passDeviceSpecs and flags.nvidiaDevRoot (host path).
  bool pass_device_specs = false;
  std::string dev_root = "/";
  // Container paths of the control nodes present on the node, in NVIDIA's
  // order (device::PresentControlNodes). Used unless control_nodes_probe is
  // set; NVIDIA stats them on every Allocate, which the probe reproduces
  // for nodes created after start-up (nvidia-uvm is loaded lazily).
  std::vector<std::string> control_nodes;
  std::function<std::vector<std::string>()> control_nodes_probe;

  // flags.gdrcopyEnabled, gdsEnabled, mofedEnabled (envs, step 7).
  bool gdrcopy_enabled = false;
  bool gds_enabled = false;
  bool mofed_enabled = false;

  // CDI naming: NVIDIA's, the vendor and class of the spec the plugin
  // writes itself (allocate_cdi.h kPluginCdiVendor).
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  std::string cdi_annotation_plugin_name = "nvidia-device-plugin";
  std::string cdi_vendor = kPluginCdiVendor;
  std::string cdi_class = kPluginCdiClass;
  // Qualified CDI names appended after the GPU and IMEX names, e.g.
  // AdditionalCdiDevices(vendor, gdrcopy, gds, mofed) for the specs that
  // exist on the node.
  std::vector<std::string> cdi_additional_devices;

  // The IMEX channels injected into every container (imex.channelIDs that
  // exist, device::PresentImexChannels).
  std::vector<int> imex_channel_ids;

  // Reject a request for more than one ID when any requested device is
  // shared (replica >= 0): sharing.timeSlicing.failRequestsGreaterThanOne,
  // and always for MPS (NVIDIA ignores the flag there).
  bool fail_requests_greater_than_one = false;

  // flags.mpsRoot (host path) when the resource is shared with MPS; empty
  // otherwise.
  std::string mps_root;
};

// Checks the options: at least one strategy; with a CDI strategy a valid
// vendor and class, an annotation plugin name that leaves room for the ID,
// valid additional device names; with MPS a resource name. InvalidArgument
// naming the field.
absl::Status ValidateAllocateOptions(const AllocateOptions& options);

// The response for `ids` (the kubelet's device IDs for one container).
// INVALID_ARGUMENT "invalid request: unknown device: <id>" for an ID not in
// the snapshot (the server checks first; this keeps direct callers safe),
// INVALID_ARGUMENT "invalid request: maximum request size for shared
// resources is 1; found <n>" under fail_requests_greater_than_one, INTERNAL
// for a visible ID that is no valid CDI device name when CDI is on.
// REQUIRES: ValidateAllocateOptions(options).ok().
absl::StatusOr<v1beta1::ContainerAllocateResponse> BuildAllocateResponse(
    const AllocateOptions& options, const pluginapi::DeviceSnapshot& snapshot,
    const std::vector<std::string>& ids);

// A handler for PluginServer running BuildAllocateResponse with a copy of
// `options`, after ValidateAllocateOptions.
absl::StatusOr<pluginapi::AllocateHandler> MakeAllocateHandler(
    AllocateOptions options);

// BuildAllocateResponse with default options: NVIDIA's default (envvar
// strategy, nothing else). Kept for tests and benchmarks.
absl::StatusOr<v1beta1::ContainerAllocateResponse> EnvvarResponse(
    const pluginapi::DeviceSnapshot& snapshot,
    const std::vector<std::string>& ids);

}  // namespace gpulet::allocation
