// nvml::Library: the one seam between gpulet and the GPU driver.
//
// Everything above src/gpu/nvml/ talks to GPUs only through this interface. It
// is a thin, typed view of the NVML C API: one method per NVML call gpulet
// uses, C++ values instead of out-parameters, and absl::Status instead of
// nvmlReturn_t. Every error names the NVML function, the device (index or
// UUID) and the NVML code, e.g.
//   "nvmlDeviceGetMemoryInfo(GPU 3): GPU is lost [NVML_ERROR_GPU_IS_LOST]".
//
// The production implementation (DynamicLibrary, dynamic_library.h) loads
// libnvidia-ml.so.1 with dlopen. Tests point it at the NVML simulator
// (sim/), so there is no in-process fake: the simulator is reached
// through exactly the same dlopen path as the real driver.
//
// Thread safety: all methods may be called concurrently from any thread, as
// NVML itself is thread-safe. Handles (nvmlDevice_t etc.) are owned by NVML
// and stay valid between Init() and the matching Shutdown().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::nvml {

using Device = nvmlDevice_t;
using GpuInstance = nvmlGpuInstance_t;
using ComputeInstance = nvmlComputeInstance_t;

struct PciInfo {
  std::string bus_id;         // "00000000:07:00.0", as NVML reports it
  std::string bus_id_legacy;  // "0000:07:00.0"
  uint32_t domain = 0;
  uint32_t bus = 0;
  uint32_t device = 0;
  uint32_t pci_device_id = 0;  // device id << 16 | vendor id
  uint32_t pci_subsystem_id = 0;
};

struct MemoryInfo {
  uint64_t total = 0;
  uint64_t reserved = 0;  // 0 when only the v1 call is available
  uint64_t free = 0;
  uint64_t used = 0;
};

struct MigMode {
  bool current = false;
  bool pending = false;
};

struct ComputeCapability {
  int major = 0;
  int minor = 0;
};

struct GpuInstanceInfo {
  Device device = nullptr;  // the parent GPU
  uint32_t id = 0;
  uint32_t profile_id = 0;
  uint32_t placement_start = 0;
  uint32_t placement_size = 0;
};

struct ComputeInstanceInfo {
  Device device = nullptr;
  GpuInstance gpu_instance = nullptr;
  uint32_t id = 0;
  uint32_t profile_id = 0;
  uint32_t placement_start = 0;
  uint32_t placement_size = 0;
};

// GPU instance profile as reported by nvmlDeviceGetGpuInstanceProfileInfo(V);
// `name` is empty when only the unversioned call exists.
struct GpuInstanceProfileInfo {
  uint32_t id = 0;
  bool is_p2p_supported = false;
  uint32_t slice_count = 0;
  uint32_t instance_count = 0;
  uint32_t multiprocessor_count = 0;
  uint32_t copy_engine_count = 0;
  uint32_t decoder_count = 0;
  uint32_t encoder_count = 0;
  uint32_t jpeg_count = 0;
  uint32_t ofa_count = 0;
  uint64_t memory_size_mb = 0;
  std::string name;
};

struct ComputeInstanceProfileInfo {
  uint32_t id = 0;
  uint32_t slice_count = 0;
  uint32_t instance_count = 0;
  uint32_t multiprocessor_count = 0;
  uint32_t shared_copy_engine_count = 0;
  uint32_t shared_decoder_count = 0;
  uint32_t shared_encoder_count = 0;
  uint32_t shared_jpeg_count = 0;
  uint32_t shared_ofa_count = 0;
  std::string name;
};

// A GPU's place in a multi-node NVLink fabric (GB200 NVL72 and the like), as
// nvmlDeviceGetGpuFabricInfo(V) reports it. `version` says which struct
// answered: 3 (driver 580+), 2, or 1 (unversioned call, no health fields).
struct GpuFabricInfo {
  std::string cluster_uuid;  // "xxxxxxxx-xxxx-…"; "" when all zero
  uint32_t clique_id = 0;
  nvmlGpuFabricState_t state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
  nvmlReturn_t status = NVML_SUCCESS;  // the probe's result once completed
  uint32_t health_mask = 0;
  uint8_t health_summary = NVML_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED;
  unsigned version = 0;
};

struct Event {
  Device device = nullptr;
  uint64_t type = 0;  // nvmlEventType* bit
  uint64_t data = 0;  // the Xid for nvmlEventTypeXidCriticalError
  uint32_t gpu_instance_id = 0xFFFFFFFF;
  uint32_t compute_instance_id = 0xFFFFFFFF;
};

// An NVML event set. Freed (nvmlEventSetFree) by the destructor.
// Thread safety: Wait() may run on one thread while Register() runs on
// another; one waiter at a time.
class EventSet {
 public:
  virtual ~EventSet() = default;
  virtual absl::Status Register(Device device, uint64_t event_types) = 0;
  // Blocks up to timeout_ms. Returns DeadlineExceeded on NVML_ERROR_TIMEOUT,
  // any other error as usual.
  virtual absl::StatusOr<Event> Wait(uint32_t timeout_ms) = 0;
};
using EventSetPtr = std::unique_ptr<EventSet>;

class Library {
 public:
  virtual ~Library() = default;

  // Reference-counted like NVML: every successful Init() needs one
  // Shutdown(). Init() on a node without a driver fails with the NVML reason.
  virtual absl::Status Init() = 0;
  virtual absl::Status Shutdown() = 0;

  // The file that was loaded, e.g.
  // "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1".
  virtual const std::string& Path() const = 0;

  // --- system
  virtual absl::StatusOr<std::string> SystemGetDriverVersion() = 0;
  virtual absl::StatusOr<std::string> SystemGetNvmlVersion() = 0;
  virtual absl::StatusOr<int> SystemGetCudaDriverVersion() = 0;

  // --- enumeration
  virtual absl::StatusOr<unsigned> DeviceGetCount() = 0;
  virtual absl::StatusOr<Device> DeviceGetHandleByIndex(unsigned index) = 0;
  virtual absl::StatusOr<Device> DeviceGetHandleByUuid(
      const std::string& uuid) = 0;
  virtual absl::StatusOr<Device> DeviceGetHandleByPciBusId(
      const std::string& bus_id) = 0;
  virtual absl::StatusOr<unsigned> DeviceGetIndex(Device device) = 0;

  // --- identity
  virtual absl::StatusOr<std::string> DeviceGetUuid(Device device) = 0;
  virtual absl::StatusOr<std::string> DeviceGetName(Device device) = 0;
  virtual absl::StatusOr<std::string> DeviceGetSerial(Device device) = 0;
  virtual absl::StatusOr<unsigned> DeviceGetMinorNumber(Device device) = 0;
  virtual absl::StatusOr<PciInfo> DeviceGetPciInfo(Device device) = 0;
  virtual absl::StatusOr<MemoryInfo> DeviceGetMemoryInfo(Device device) = 0;
  virtual absl::StatusOr<ComputeCapability> DeviceGetCudaComputeCapability(
      Device device) = 0;
  virtual absl::StatusOr<nvmlBrandType_t> DeviceGetBrand(Device device) = 0;
  virtual absl::StatusOr<nvmlDeviceArchitecture_t> DeviceGetArchitecture(
      Device device) = 0;
  // Optional in NVML (newer drivers): Unimplemented when the symbol is absent.
  virtual absl::StatusOr<unsigned> DeviceGetNumaNodeId(Device device) = 0;
  // CPUs the GPU is local to, as a list of CPU numbers.
  virtual absl::StatusOr<std::vector<unsigned>> DeviceGetCpuAffinity(
      Device device) = 0;
  // The newest struct the driver knows (v3, then v2 on
  // NVML_ERROR_ARGUMENT_VERSION_MISMATCH, then the unversioned call).
  // Unimplemented when neither symbol exists; NVML's NOT_SUPPORTED otherwise
  // passes through (GPUs outside a fabric may answer either way).
  virtual absl::StatusOr<GpuFabricInfo> DeviceGetGpuFabricInfo(
      Device device) = 0;

  // --- MIG
  virtual absl::StatusOr<MigMode> DeviceGetMigMode(Device device) = 0;
  virtual absl::StatusOr<unsigned> DeviceGetMaxMigDeviceCount(
      Device device) = 0;
  virtual absl::StatusOr<Device> DeviceGetMigDeviceHandleByIndex(
      Device device, unsigned index) = 0;
  virtual absl::StatusOr<bool> DeviceIsMigDeviceHandle(Device device) = 0;
  virtual absl::StatusOr<Device> DeviceGetDeviceHandleFromMigDeviceHandle(
      Device mig_device) = 0;
  virtual absl::StatusOr<unsigned> DeviceGetGpuInstanceId(Device device) = 0;
  virtual absl::StatusOr<unsigned> DeviceGetComputeInstanceId(
      Device device) = 0;
  virtual absl::StatusOr<nvmlDeviceAttributes_t> DeviceGetAttributes(
      Device device) = 0;
  virtual absl::StatusOr<GpuInstanceProfileInfo>
  DeviceGetGpuInstanceProfileInfo(Device device, unsigned profile) = 0;
  virtual absl::StatusOr<GpuInstance> DeviceGetGpuInstanceById(Device device,
                                                               unsigned id) = 0;
  virtual absl::StatusOr<GpuInstanceInfo> GpuInstanceGetInfo(
      GpuInstance gpu_instance) = 0;
  virtual absl::StatusOr<ComputeInstanceProfileInfo>
  GpuInstanceGetComputeInstanceProfileInfo(GpuInstance gpu_instance,
                                           unsigned profile,
                                           unsigned engine_profile) = 0;
  virtual absl::StatusOr<ComputeInstance> GpuInstanceGetComputeInstanceById(
      GpuInstance gpu_instance, unsigned id) = 0;
  virtual absl::StatusOr<ComputeInstanceInfo> ComputeInstanceGetInfo(
      ComputeInstance compute_instance) = 0;

  // --- topology
  virtual absl::StatusOr<nvmlGpuTopologyLevel_t>
  DeviceGetTopologyCommonAncestor(Device a, Device b) = 0;
  virtual absl::StatusOr<bool> DeviceGetNvLinkState(Device device,
                                                    unsigned link) = 0;
  virtual absl::StatusOr<PciInfo> DeviceGetNvLinkRemotePciInfo(
      Device device, unsigned link) = 0;
  virtual absl::StatusOr<nvmlIntNvLinkDeviceType_t>
  DeviceGetNvLinkRemoteDeviceType(Device device, unsigned link) = 0;
  virtual absl::StatusOr<nvmlGpuP2PStatus_t> DeviceGetP2PStatus(
      Device a, Device b, nvmlGpuP2PCapsIndex_t index) = 0;

  // --- events
  virtual absl::StatusOr<EventSetPtr> EventSetCreate() = 0;
  virtual absl::StatusOr<uint64_t> DeviceGetSupportedEventTypes(
      Device device) = 0;
};

using LibraryPtr = std::unique_ptr<Library>;

}  // namespace gpulet::nvml
