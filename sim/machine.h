// Machine: the static description of a simulated GPU node, as read from a
// machine file (YAML) or a built-in profile. Plain values, no behaviour; the
// simulator's run-time state (initialisation count, lost GPUs, event queues)
// lives in SimState, not here.
//
// Parsing: machine_parser.h turns YAML text into a Machine and rejects
// anything inconsistent with an error naming the source and line. Built-in
// profiles (profiles/*.yaml) are compiled into the simulator library.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::sim {

// A GPU instance profile as NVML reports it for one GPU model.
struct GpuInstanceProfile {
  unsigned id = 0;  // NVML_GPU_INSTANCE_PROFILE_*
  // nvmlGpuInstanceProfileInfo_t::id and nvmlGpuInstanceInfo_t::profileId:
  // the ID nvidia-smi prints ("19" for 1g.5gb), distinct from `id`.
  unsigned profile_id = 0;
  std::string name;  // "1g.5gb" (NVML reports "MIG 1g.5gb")
  unsigned slice_count = 0;
  unsigned instance_count = 0;
  unsigned multiprocessor_count = 0;
  unsigned copy_engine_count = 0;
  unsigned decoder_count = 0;
  unsigned encoder_count = 0;
  unsigned jpeg_count = 0;
  unsigned ofa_count = 0;
  uint64_t memory_size_mb = 0;
  bool p2p_supported = false;
  // Valid placements: GI slots [start, start + placement_size).
  std::vector<unsigned> placement_starts;
  unsigned placement_size = 0;

  bool operator==(const GpuInstanceProfile&) const = default;
};

struct ComputeInstanceProfile {
  unsigned id = 0;   // NVML_COMPUTE_INSTANCE_PROFILE_*
  std::string name;  // "1c.1g.5gb" style, or "" when not given
  unsigned slice_count = 0;
  unsigned instance_count = 0;
  unsigned multiprocessor_count = 0;

  bool operator==(const ComputeInstanceProfile&) const = default;
};

// One MIG device: a compute instance inside a GPU instance.
struct MigDevice {
  std::string uuid;  // "MIG-xxxxxxxx-..."
  unsigned gpu_instance_id = 0;
  unsigned gpu_instance_profile_id = 0;  // key into Gpu::gi_profiles
  unsigned gi_placement_start = 0;
  unsigned gi_placement_size = 0;
  unsigned compute_instance_id = 0;
  unsigned compute_instance_profile_id = 0;  // key into Gpu::ci_profiles
  unsigned ci_placement_start = 0;
  unsigned ci_placement_size = 0;

  bool operator==(const MigDevice&) const = default;
};

struct NvLink {
  bool active = true;
  nvmlIntNvLinkDeviceType_t remote_type = NVML_NVLINK_DEVICE_TYPE_GPU;
  int peer_gpu = -1;          // index of the peer GPU when remote_type is GPU
  std::string remote_bus_id;  // PCI bus ID of the remote end (GPU or switch)

  bool operator==(const NvLink&) const = default;
};

// The GPU's NVLink fabric membership (nvmlDeviceGetGpuFabricInfo(V)).
struct GpuFabric {
  std::array<unsigned char, NVML_GPU_FABRIC_UUID_LEN> cluster_uuid = {};
  unsigned clique_id = 0;
  nvmlGpuFabricState_t state = NVML_GPU_FABRIC_STATE_COMPLETED;
  nvmlReturn_t status = NVML_SUCCESS;
  unsigned health_mask = 0;
  unsigned char health_summary = NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY;

  bool operator==(const GpuFabric&) const = default;
};

// A PCI function that shares a GPU's IOMMU group: the board's own audio,
// USB-C and UCSI functions, a bridge, or a foreign device behind the same
// switch (machine-file key `functions`).
struct PciFunction {
  std::string address;  // "0000:1b:00.1" (sysfs form, lower case)
  uint16_t vendor = 0x10de;
  uint16_t device = 0;
  uint32_t class_code = 0;  // 0x040300 audio, 0x010802 NVMe, 0x060400 bridge
  std::string driver;       // bound driver; "" when unbound

  bool operator==(const PciFunction&) const = default;
};

// A vGPU type a GPU offers (mdev_supported_types/<id>) and an instance of
// one (/sys/bus/mdev/devices/<uuid>).
struct MdevType {
  std::string id;          // "nvidia-558"
  std::string name;        // "GRID H100-4C"
  unsigned available = 0;  // available_instances

  bool operator==(const MdevType&) const = default;
};
struct Mdev {
  std::string uuid;  // lower-case 8-4-4-4-12
  std::string type;  // an MdevType id of the parent GPU

  bool operator==(const Mdev&) const = default;
};

struct Gpu {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  std::string serial;
  unsigned minor = 0;  // /dev/nvidia<minor>
  std::string bus_id;  // "00000000:18:00.0" (NVML's 8-digit domain form)
  uint32_t pci_device_id = 0;  // device << 16 | 0x10de
  uint32_t pci_subsystem_id = 0;
  int numa_node = -1;                  // -1: no NUMA affinity reported
  std::vector<unsigned> cpu_affinity;  // CPU numbers local to this GPU
  int cc_major = 0;
  int cc_minor = 0;
  nvmlDeviceArchitecture_t architecture = NVML_DEVICE_ARCH_UNKNOWN;
  nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
  uint64_t memory_total = 0;     // bytes
  uint64_t memory_reserved = 0;  // bytes
  uint64_t memory_used = 0;      // bytes (includes reserved)
  unsigned multiprocessor_count = 0;

  bool mig_capable = false;
  bool mig_enabled = false;      // current mode
  bool mig_pending = false;      // pending mode
  unsigned max_mig_devices = 0;  // nvmlDeviceGetMaxMigDeviceCount
  std::vector<GpuInstanceProfile> gi_profiles;
  std::vector<ComputeInstanceProfile> ci_profiles;
  std::vector<MigDevice> mig_devices;

  std::vector<NvLink> nvlinks;  // index = link number, < NVML_NVLINK_MAX_LINKS
  uint64_t supported_events = 0;  // nvmlEventType* mask
  // Unset: nvmlDeviceGetGpuFabricInfo(V) answers NVML_ERROR_NOT_SUPPORTED.
  std::optional<GpuFabric> fabric;

  // Passthrough (rendered in sysfs, see node_render.h). A GPU bound to any
  // driver but nvidia is not enumerated by NVML: the parser moves it to
  // Machine::host_gpus.
  std::string bound_driver = "nvidia";  // "" when unbound
  int iommu_group = -1;  // -1 in the file: the GPU's index in `gpus`
  std::vector<PciFunction> functions;  // the rest of its IOMMU group
  std::vector<MdevType> mdev_types;
  std::vector<Mdev> mdevs;

  bool operator==(const Gpu&) const = default;
};

struct Machine {
  std::string source;       // file path or "profile:<name>", for messages
  std::string description;  // one line for listings, may be empty
  // The machine's product name as DMI reports it
  // (/sys/class/dmi/id/product_name: "DGX H100"); empty: none rendered.
  std::string product_name;
  // false: nvmlInit fails with init_error as on a node without the driver.
  bool driver_loaded = true;
  nvmlReturn_t init_error = NVML_ERROR_DRIVER_NOT_LOADED;
  std::string driver_version;   // "550.54.15"
  std::string nvml_version;     // "12.550.54.15"
  int cuda_driver_version = 0;  // 12040 for CUDA 12.4
  // IMEX channels the driver offers (/dev/nvidia-caps-imex-channels/
  // channel<N>, N < imex_channels); 0 on nodes outside a multi-node NVLink
  // domain.
  unsigned imex_channels = 0;
  std::vector<Gpu> gpus;  // what NVML enumerates (bound to nvidia)
  // GPUs of the machine file bound to another driver (vfio-pci) or none:
  // present in sysfs only, as on a real host.
  std::vector<Gpu> host_gpus;
  bool iommufd = false;  // /dev/iommu and vfio-dev/vfioN cdevs
  // topology[i][j]: common ancestor of GPU i and j; INTERNAL on the diagonal.
  std::vector<std::vector<nvmlGpuTopologyLevel_t>> topology;

  bool operator==(const Machine&) const = default;
};

}  // namespace gpulet::sim
