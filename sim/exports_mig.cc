// Exported NVML entry points: MIG mode, MIG device handles, GPU instances
// and compute instances.
#include <cstring>
#include <optional>
#include <string>

#include "sim/machine_queries.h"
#include "sim/sim_runtime.h"
#include "src/gpu/nvml/nvml_api.h"

using gpulet::sim::CiProfileInGi;
using gpulet::sim::ComputeInstanceProfile;
using gpulet::sim::ComputeInstanceView;
using gpulet::sim::DeviceView;
using gpulet::sim::FindCiProfile;
using gpulet::sim::FindGiProfile;
using gpulet::sim::GpuInstanceProfile;
using gpulet::sim::GpuInstanceView;
using gpulet::sim::State;
using gpulet::sim::WithGpu;

namespace {

template <typename Fn>
nvmlReturn_t WithMig(nvmlDevice_t device, Fn fn) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    return d.mig == nullptr ? NVML_ERROR_NOT_SUPPORTED : fn(d);
  });
}

void CopyName(const std::string& name,
              char (&out)[NVML_DEVICE_NAME_V2_BUFFER_SIZE]) {
  std::memset(out, 0, sizeof(out));
  std::strncpy(out, ("MIG " + name).c_str(), sizeof(out) - 1);
}

nvmlReturn_t Attributes(nvmlDevice_t device, nvmlDeviceAttributes_t* out) {
  return WithMig(device, [&](const DeviceView& d) {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const GpuInstanceProfile* gi =
        FindGiProfile(d.gpu, d.mig->gpu_instance_profile_id);
    const ComputeInstanceProfile* ci =
        FindCiProfile(d.gpu, d.mig->compute_instance_profile_id);
    if (gi == nullptr || ci == nullptr) return NVML_ERROR_UNKNOWN;
    std::optional<CiProfileInGi> in_gi =
        gpulet::sim::ComputeProfileIn(*gi, *ci);
    if (!in_gi.has_value()) return NVML_ERROR_UNKNOWN;
    *out = nvmlDeviceAttributes_t{};
    out->multiprocessorCount = in_gi->multiprocessor_count;
    out->sharedCopyEngineCount = gi->copy_engine_count;
    out->sharedDecoderCount = gi->decoder_count;
    out->sharedEncoderCount = gi->encoder_count;
    out->sharedJpegCount = gi->jpeg_count;
    out->sharedOfaCount = gi->ofa_count;
    out->gpuInstanceSliceCount = gi->slice_count;
    out->computeInstanceSliceCount = in_gi->slice_count;
    out->memorySizeMB = gi->memory_size_mb;
    return NVML_SUCCESS;
  });
}

// Shared by the plain and the versioned call: `fill` receives the profile.
template <typename Fill>
nvmlReturn_t GiProfileInfo(nvmlDevice_t device, unsigned int profile,
                           bool null_info, Fill fill) {
  return WithGpu(device, [&](const DeviceView& d) {
    if (null_info || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!d.gpu.mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    const GpuInstanceProfile* gi = FindGiProfile(d.gpu, profile);
    if (gi == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    fill(*gi);
    return NVML_SUCCESS;
  });
}

template <typename Fill>
nvmlReturn_t CiProfileInfo(nvmlGpuInstance_t instance, unsigned int profile,
                           unsigned int eng_profile, bool null_info,
                           Fill fill) {
  return State().WithGpuInstance(instance, [&](const GpuInstanceView& g) {
    if (null_info || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
        eng_profile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    const ComputeInstanceProfile* ci = FindCiProfile(g.gpu, profile);
    if (ci == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    std::optional<CiProfileInGi> in_gi =
        gpulet::sim::ComputeProfileIn(g.profile, *ci);
    if (!in_gi.has_value()) return NVML_ERROR_NOT_SUPPORTED;
    fill(g.profile, *ci, *in_gi);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t ComputeInstanceInfo(nvmlComputeInstance_t instance,
                                 nvmlComputeInstanceInfo_t* info,
                                 size_t bytes) {
  return State().WithComputeInstance(
      instance, [&](const ComputeInstanceView& c) {
        if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        nvmlComputeInstanceInfo_t full{};
        full.device = c.handles.Gpu(c.gpu_index);
        full.gpuInstance =
            c.handles.GpuInstance(c.gpu_index, c.mig.gpu_instance_id);
        full.id = c.mig.compute_instance_id;
        full.profileId = c.mig.compute_instance_profile_id;
        full.placement = {c.mig.ci_placement_start, c.mig.ci_placement_size};
        std::memcpy(info, &full, bytes);
        return NVML_SUCCESS;
      });
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device,
                                  unsigned int* currentMode,
                                  unsigned int* pendingMode) {
  return WithGpu(device, [&](const DeviceView& d) {
    if (currentMode == nullptr || pendingMode == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!d.gpu.mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    *currentMode =
        d.gpu.mig_enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pendingMode =
        d.gpu.mig_pending ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                            unsigned int* count) {
  return WithGpu(device, [&](const DeviceView& d) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // "Returns zero if MIG is not supported or enabled."
    bool on = d.gpu.mig_capable && d.gpu.mig_enabled;
    *count = on ? d.gpu.max_mig_devices : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                 unsigned int index,
                                                 nvmlDevice_t* migDevice) {
  return WithGpu(device, [&](const DeviceView& d) {
    if (migDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.gpu.mig_capable || !d.gpu.mig_enabled) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    size_t slots = d.gpu.max_mig_devices > d.gpu.mig_devices.size()
                       ? d.gpu.max_mig_devices
                       : d.gpu.mig_devices.size();
    if (index >= slots) return NVML_ERROR_INVALID_ARGUMENT;
    if (index >= d.gpu.mig_devices.size()) return NVML_ERROR_NOT_FOUND;
    *migDevice = d.handles.Mig(d.gpu_index, static_cast<int>(index));
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device,
                                         unsigned int* isMigDevice) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    if (isMigDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = d.mig != nullptr ? 1 : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(
    nvmlDevice_t migDevice, nvmlDevice_t* device) {
  return WithMig(migDevice, [&](const DeviceView& d) {
    if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *device = d.handles.Gpu(d.gpu_index);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return WithMig(device, [&](const DeviceView& d) {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *id = d.mig->gpu_instance_id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device,
                                            unsigned int* id) {
  return WithMig(device, [&](const DeviceView& d) {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *id = d.mig->compute_instance_id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device,
                                        nvmlDeviceAttributes_t* attributes) {
  return Attributes(device, attributes);
}

nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t device,
                                     nvmlDeviceAttributes_t* attributes) {
  return Attributes(device, attributes);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile,
    nvmlGpuInstanceProfileInfo_t* info) {
  return GiProfileInfo(
      device, profile, info == nullptr, [&](const GpuInstanceProfile& gi) {
        *info = nvmlGpuInstanceProfileInfo_t{
            gi.profile_id,     gi.p2p_supported ? 1u : 0u, gi.slice_count,
            gi.instance_count, gi.multiprocessor_count,    gi.copy_engine_count,
            gi.decoder_count,  gi.encoder_count,           gi.jpeg_count,
            gi.ofa_count,      gi.memory_size_mb};
      });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(
    nvmlDevice_t device, unsigned int profile,
    nvmlGpuInstanceProfileInfo_v2_t* info) {
  if (info != nullptr && info->version != nvmlGpuInstanceProfileInfo_v2) {
    // Still report UNINITIALIZED / bad handles first.
    return State().WithDevice(device, [](const DeviceView&) {
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    });
  }
  return GiProfileInfo(device, profile, info == nullptr,
                       [&](const GpuInstanceProfile& gi) {
                         unsigned int version = info->version;
                         *info = nvmlGpuInstanceProfileInfo_v2_t{};
                         info->version = version;
                         info->id = gi.profile_id;
                         info->isP2pSupported = gi.p2p_supported ? 1 : 0;
                         info->sliceCount = gi.slice_count;
                         info->instanceCount = gi.instance_count;
                         info->multiprocessorCount = gi.multiprocessor_count;
                         info->copyEngineCount = gi.copy_engine_count;
                         info->decoderCount = gi.decoder_count;
                         info->encoderCount = gi.encoder_count;
                         info->jpegCount = gi.jpeg_count;
                         info->ofaCount = gi.ofa_count;
                         info->memorySizeMB = gi.memory_size_mb;
                         CopyName(gi.name, info->name);
                       });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t* gpuInstance) {
  return WithGpu(device, [&](const DeviceView& d) {
    if (gpuInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.gpu.mig_capable || !d.gpu.mig_enabled) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    if (gpulet::sim::FindMig(d.gpu, id) == nullptr) return NVML_ERROR_NOT_FOUND;
    *gpuInstance = d.handles.GpuInstance(d.gpu_index, id);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                    nvmlGpuInstanceInfo_t* info) {
  return State().WithGpuInstance(gpuInstance, [&](const GpuInstanceView& g) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *info = nvmlGpuInstanceInfo_t{};
    info->device = g.handles.Gpu(g.gpu_index);
    info->id = g.first.gpu_instance_id;
    info->profileId = g.profile.profile_id;
    info->placement = {g.first.gi_placement_start, g.first.gi_placement_size};
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpuInstance, unsigned int profile,
    unsigned int engProfile, nvmlComputeInstanceProfileInfo_t* info) {
  return CiProfileInfo(
      gpuInstance, profile, engProfile, info == nullptr,
      [&](const GpuInstanceProfile& gi, const ComputeInstanceProfile& ci,
          const CiProfileInGi& in_gi) {
        *info = nvmlComputeInstanceProfileInfo_t{ci.id,
                                                 in_gi.slice_count,
                                                 in_gi.instance_count,
                                                 in_gi.multiprocessor_count,
                                                 gi.copy_engine_count,
                                                 gi.decoder_count,
                                                 gi.encoder_count,
                                                 gi.jpeg_count,
                                                 gi.ofa_count};
      });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(
    nvmlGpuInstance_t gpuInstance, unsigned int profile,
    unsigned int engProfile, nvmlComputeInstanceProfileInfo_v2_t* info) {
  if (info != nullptr && info->version != nvmlComputeInstanceProfileInfo_v2) {
    return State().WithGpuInstance(gpuInstance, [](const GpuInstanceView&) {
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    });
  }
  return CiProfileInfo(
      gpuInstance, profile, engProfile, info == nullptr,
      [&](const GpuInstanceProfile& gi, const ComputeInstanceProfile& ci,
          const CiProfileInGi& in_gi) {
        unsigned int version = info->version;
        *info = nvmlComputeInstanceProfileInfo_v2_t{};
        info->version = version;
        info->id = ci.id;
        info->sliceCount = in_gi.slice_count;
        info->instanceCount = in_gi.instance_count;
        info->multiprocessorCount = in_gi.multiprocessor_count;
        info->sharedCopyEngineCount = gi.copy_engine_count;
        info->sharedDecoderCount = gi.decoder_count;
        info->sharedEncoderCount = gi.encoder_count;
        info->sharedJpegCount = gi.jpeg_count;
        info->sharedOfaCount = gi.ofa_count;
        CopyName(in_gi.name, info->name);
      });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(
    nvmlGpuInstance_t gpuInstance, unsigned int id,
    nvmlComputeInstance_t* computeInstance) {
  return State().WithGpuInstance(gpuInstance, [&](const GpuInstanceView& g) {
    if (computeInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int gi = g.first.gpu_instance_id;
    if (gpulet::sim::FindMig(g.gpu, gi, id) == nullptr) {
      return NVML_ERROR_NOT_FOUND;
    }
    *computeInstance = g.handles.ComputeInstance(g.gpu_index, gi, id);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(
    nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t* info) {
  return ComputeInstanceInfo(computeInstance, info, sizeof(*info));
}

// The v1 struct ended before `placement`.
nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t computeInstance,
                                        nvmlComputeInstanceInfo_t* info) {
  return ComputeInstanceInfo(computeInstance, info,
                             offsetof(nvmlComputeInstanceInfo_t, placement));
}

}  // extern "C"
