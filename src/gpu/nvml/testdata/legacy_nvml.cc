// A stand-in for an old libnvidia-ml (pre-_v2 entry points), used only by
// dynamic_library_legacy_test.cc to exercise the loader's fallbacks, which
// the simulator (always the newest ABI) cannot reach:
//   - only unversioned nvmlInit / nvmlDeviceGetCount / ...HandleByIndex /
//     nvmlDeviceGetPciInfo (filling NVML's old 52-byte struct, whose
//     reserved words sit where busId is today) exist;
//   - nvmlDeviceGetMemoryInfo_v2 exists but rejects the struct version, as a
//     driver that predates nvmlMemory_v2 would;
//   - nvmlDeviceGetGpuFabricInfoV knows nvmlGpuFabricInfo_v2 only, as
//     drivers before 580 do (no nvmlDeviceGetGpuFabricInfo at all).
// One GPU, index 0, bus 0000:3B:00.0.
#include <cstring>

#include "src/gpu/nvml/nvml_api.h"

// The opaque handle type nvml_api.h forward-declares.
struct nvmlDevice_st {
  int unused;
};

namespace {

struct LegacyPciInfo {  // nvmlPciInfo_t before NVML 11 (v1/v2 layout)
  char busId[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  unsigned int reserved[4];
};
static_assert(sizeof(LegacyPciInfo) == 52);

int g_init_count = 0;
nvmlDevice_st g_gpu;

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit(void) {
  ++g_init_count;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown(void) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --g_init_count;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(
    nvmlReturn_t result) {
  return result == NVML_SUCCESS ? "Success" : "Legacy Error";
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount(
    unsigned int* count) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  *count = 1;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex(
    unsigned int index, nvmlDevice_t* device) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (index != 0) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &g_gpu;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetIndex(
    nvmlDevice_t device, unsigned int* index) {
  if (device != &g_gpu) return NVML_ERROR_INVALID_ARGUMENT;
  *index = 0;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPciInfo(
    nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (device != &g_gpu) return NVML_ERROR_INVALID_ARGUMENT;
  LegacyPciInfo legacy = {};
  std::strcpy(legacy.busId, "0000:3B:00.0");
  legacy.domain = 0;
  legacy.bus = 0x3b;
  legacy.device = 0;
  legacy.pciDeviceId = 0x1eb810de;
  legacy.pciSubSystemId = 0x12a210de;
  // Garbage where today's busId starts: the loader must not read it.
  for (unsigned int& word : legacy.reserved) word = 0x41414141;
  std::memcpy(pci, &legacy, sizeof(legacy));
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(
    nvmlDevice_t, nvmlMemory_v2_t*) {
  return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(
    nvmlDevice_t device, nvmlMemory_t* memory) {
  if (device != &g_gpu) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = 16ULL << 30;
  memory->used = 1ULL << 30;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(
    nvmlDevice_t device, nvmlGpuFabricInfoV_t* info) {
  if (device != &g_gpu || info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (info->version != nvmlGpuFabricInfo_v2) {
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  }
  auto* v2 = reinterpret_cast<nvmlGpuFabricInfo_v2_t*>(info);
  for (unsigned i = 0; i < NVML_GPU_FABRIC_UUID_LEN; ++i) {
    v2->clusterUuid[i] = static_cast<unsigned char>(0xA0 + i);
  }
  v2->status = NVML_SUCCESS;
  v2->cliqueId = 5;
  v2->state = NVML_GPU_FABRIC_STATE_COMPLETED;
  v2->healthMask = 0x2;
  return NVML_SUCCESS;
}

}  // extern "C"
