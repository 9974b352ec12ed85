// The device model: plain values describing the GPUs of one node as
// discovered through NVML (discovery.h). Nothing here touches NVML; a Node is
// a snapshot that callers copy, compare and format freely.
//
// Ownership: values only. Thread safety: as for any plain struct (const
// access from many threads is safe).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpulet::device {

// Where a GPU instance sits on its parent: the GI profile's unique ID
// (nvmlGpuInstanceInfo_t::profileId, nvidia-smi's "ID") and its placement
// in memory slices. One placement holds at most one GPU instance, so this
// identifies a MIG device stably (DRA device names use it).
struct GiPlacement {
  unsigned profile_id = 0;
  unsigned start = 0;
  unsigned size = 0;

  bool operator==(const GiPlacement&) const = default;
};

// One MIG device: a compute instance inside a GPU instance of a parent GPU.
struct MigDevice {
  std::string uuid;           // "MIG-…"
  unsigned parent_index = 0;  // index of the parent GPU
  unsigned mig_index = 0;     // slot for nvmlDeviceGetMigDeviceHandleByIndex
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  std::string profile;  // NVIDIA's name: "1g.5gb", "1c.2g.10gb", "1g.10gb+me"
  uint64_t memory_bytes = 0;
  unsigned gi_slice_count = 0;
  unsigned ci_slice_count = 0;
  unsigned multiprocessor_count = 0;
  // Engines of the GPU instance (nvmlDeviceAttributes_t's shared* counts).
  unsigned copy_engine_count = 0;
  unsigned decoder_count = 0;
  unsigned encoder_count = 0;
  unsigned jpeg_count = 0;
  unsigned ofa_count = 0;
  // Unset when NVML would not describe the GPU instance (no permission).
  std::optional<GiPlacement> gi_placement = std::nullopt;

  bool operator==(const MigDevice&) const = default;
};

// The GPU's place in a multi-node NVLink domain (GB200 NVL72 and the like),
// from nvmlDeviceGetGpuFabricInfo(V).
struct GpuFabric {
  std::string cluster_uuid;  // "" until the fabric manager assigned one
  uint32_t clique_id = 0;
  std::string state;   // "not-started", "in-progress", "completed"
  std::string health;  // "healthy", "unhealthy", "limited-capacity", ""
  // Non-empty when the probe completed with an error: NVML's text for it.
  std::string error;

  // True when the GPU joined its clique: completed without error.
  bool Joined() const { return state == "completed" && error.empty(); }
  bool operator==(const GpuFabric&) const = default;
};

struct Gpu {
  unsigned index = 0;  // NVML index
  std::string uuid;    // "GPU-…"
  std::string name;    // "NVIDIA H100 80GB HBM3"
  std::string serial;
  unsigned minor = 0;          // /dev/nvidia<minor>
  std::string bus_id;          // NVML form, "00000000:18:00.0"
  uint32_t pci_device_id = 0;  // device << 16 | vendor
  uint64_t memory_total_bytes = 0;
  std::optional<int> numa_node;        // unset: no NUMA affinity known
  std::vector<unsigned> cpu_affinity;  // CPU numbers local to the GPU
  int cc_major = 0;
  int cc_minor = 0;
  std::string architecture;  // "Hopper", "Ampere", … or "Unknown"
  std::string brand;         // "Tesla", "NVIDIA", … or "Unknown"
  bool mig_capable = false;
  bool mig_enabled = false;            // current MIG mode
  std::vector<MigDevice> mig_devices;  // ordered by mig_index
  // Unset when NVML reports no fabric support (every GPU before Hopper, and
  // GPUs outside a multi-node NVLink domain).
  std::optional<GpuFabric> fabric;
  // Non-empty when a per-GPU NVML query failed during discovery (the GPU is
  // lost, or answers some calls only): why. The record then holds what was
  // known of the GPU (from an earlier discovery, or the fields read before
  // the failure); its devices are advertised Unhealthy with this reason.
  std::string failure;

  bool operator==(const Gpu&) const = default;
};

struct Node {
  std::string driver_version;   // "550.54.15"
  std::string nvml_version;     // "12.550.54.15"
  int cuda_driver_version = 0;  // 12040 means CUDA 12.4
  std::vector<Gpu> gpus;        // ordered by index

  bool operator==(const Node&) const = default;
};

// "12.4" for 12040; "" for 0 (unknown).
std::string CudaVersionString(int cuda_driver_version);

// Display names for NVML's nvmlDeviceArchitecture_t and nvmlBrandType_t
// values ("Hopper", "Blackwell", "Tesla"); "Unknown" for values NVML may add
// later.
std::string ArchitectureName(unsigned nvml_architecture);
std::string BrandName(unsigned nvml_brand);

}  // namespace gpulet::device
