// GpuModel: what the simulator knows about a real GPU product (name, PCI IDs,
// memory, compute capability, MIG profile tables), so a machine file can say
// `model: A100-SXM4-40GB` instead of repeating NVIDIA's tables per GPU.
//
// The tables follow `nvidia-smi mig -lgip` / `-lcip` output and NVIDIA's MIG
// user guide. Memory sizes are chosen so that go-nvlib's naming rule turns
// the MIG attributes back into the documented profile names ("1g.5gb").
//
// Immutable static data; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "sim/machine.h"

namespace gpulet::sim {

struct GpuModel {
  std::string key;             // "A100-SXM4-40GB", what `model:` names
  std::string name;            // NVML name, "NVIDIA A100-SXM4-40GB"
  uint32_t pci_device_id = 0;  // device << 16 | 0x10de
  uint32_t pci_subsystem_id = 0;
  uint64_t memory_total = 0;  // bytes, as nvmlDeviceGetMemoryInfo reports
  int cc_major = 0;
  int cc_minor = 0;
  nvmlDeviceArchitecture_t architecture = NVML_DEVICE_ARCH_UNKNOWN;
  nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
  unsigned multiprocessor_count = 0;
  bool mig_capable = false;
  unsigned max_mig_devices = 0;
  std::vector<GpuInstanceProfile> gi_profiles;
  std::vector<ComputeInstanceProfile> ci_profiles;
};

// The known models, in a stable order.
const std::vector<GpuModel>& GpuModels();

// Finds a model by key or by NVML name, ignoring case. nullptr if unknown.
const GpuModel* FindGpuModel(absl::string_view key_or_name);

// "A100-SXM4-40GB, A100-SXM4-80GB, ..." for error messages.
std::string GpuModelKeys();

namespace models {
// Hopper H200 and the Blackwell models (gpu_models_recent.cc).
GpuModel H200Sxm();
GpuModel B200();
GpuModel GB200();
GpuModel RtxPro6000Bse();
}  // namespace models

}  // namespace gpulet::sim
