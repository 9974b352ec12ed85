// DynamicLibrary: Multi-Instance GPU queries.
#include <cstring>

#include "src/gpu/nvml/dynamic_library.h"

namespace gpulet::nvml {
namespace {

std::string Bounded(const char* text, size_t size) {
  return std::string(text, ::strnlen(text, size));
}

template <typename Raw>
GpuInstanceProfileInfo ToGpuInstanceProfile(const Raw& raw) {
  GpuInstanceProfileInfo info;
  info.id = raw.id;
  info.is_p2p_supported = raw.isP2pSupported != 0;
  info.slice_count = raw.sliceCount;
  info.instance_count = raw.instanceCount;
  info.multiprocessor_count = raw.multiprocessorCount;
  info.copy_engine_count = raw.copyEngineCount;
  info.decoder_count = raw.decoderCount;
  info.encoder_count = raw.encoderCount;
  info.jpeg_count = raw.jpegCount;
  info.ofa_count = raw.ofaCount;
  info.memory_size_mb = raw.memorySizeMB;
  return info;
}

template <typename Raw>
ComputeInstanceProfileInfo ToComputeInstanceProfile(const Raw& raw) {
  ComputeInstanceProfileInfo info;
  info.id = raw.id;
  info.slice_count = raw.sliceCount;
  info.instance_count = raw.instanceCount;
  info.multiprocessor_count = raw.multiprocessorCount;
  info.shared_copy_engine_count = raw.sharedCopyEngineCount;
  info.shared_decoder_count = raw.sharedDecoderCount;
  info.shared_encoder_count = raw.sharedEncoderCount;
  info.shared_jpeg_count = raw.sharedJpegCount;
  info.shared_ofa_count = raw.sharedOfaCount;
  return info;
}

}  // namespace

absl::StatusOr<MigMode> DynamicLibrary::DeviceGetMigMode(Device device) {
  unsigned current = 0;
  unsigned pending = 0;
  absl::Status status =
      Call(fn_.nvmlDeviceGetMigMode, device, device, &current, &pending);
  if (!status.ok()) return status;
  return MigMode{current == NVML_DEVICE_MIG_ENABLE,
                 pending == NVML_DEVICE_MIG_ENABLE};
}

absl::StatusOr<unsigned> DynamicLibrary::DeviceGetMaxMigDeviceCount(
    Device device) {
  return GetUnsigned(fn_.nvmlDeviceGetMaxMigDeviceCount, device);
}

absl::StatusOr<Device> DynamicLibrary::DeviceGetMigDeviceHandleByIndex(
    Device device, unsigned index) {
  Device mig = nullptr;
  absl::Status status =
      Call(fn_.nvmlDeviceGetMigDeviceHandleByIndex,
           Item<Device>{device, "MIG device", index}, device, index, &mig);
  if (!status.ok()) return status;
  Remember(mig, Origin{device, index});
  return mig;
}

absl::StatusOr<bool> DynamicLibrary::DeviceIsMigDeviceHandle(Device device) {
  absl::StatusOr<unsigned> is_mig =
      GetUnsigned(fn_.nvmlDeviceIsMigDeviceHandle, device);
  if (!is_mig.ok()) return is_mig.status();
  return *is_mig != 0;
}

absl::StatusOr<Device> DynamicLibrary::DeviceGetDeviceHandleFromMigDeviceHandle(
    Device mig_device) {
  Device parent = nullptr;
  absl::Status status = Call(fn_.nvmlDeviceGetDeviceHandleFromMigDeviceHandle,
                             mig_device, mig_device, &parent);
  if (!status.ok()) return status;
  return parent;
}

absl::StatusOr<unsigned> DynamicLibrary::DeviceGetGpuInstanceId(Device device) {
  return GetUnsigned(fn_.nvmlDeviceGetGpuInstanceId, device);
}

absl::StatusOr<unsigned> DynamicLibrary::DeviceGetComputeInstanceId(
    Device device) {
  return GetUnsigned(fn_.nvmlDeviceGetComputeInstanceId, device);
}

absl::StatusOr<nvmlDeviceAttributes_t> DynamicLibrary::DeviceGetAttributes(
    Device device) {
  nvmlDeviceAttributes_t attributes = {};
  absl::Status status =
      Call(fn_.nvmlDeviceGetAttributes_v2, device, device, &attributes);
  if (!status.ok()) return status;
  return attributes;
}

absl::StatusOr<GpuInstanceProfileInfo>
DynamicLibrary::DeviceGetGpuInstanceProfileInfo(Device device,
                                                unsigned profile) {
  const auto& versioned = fn_.nvmlDeviceGetGpuInstanceProfileInfoV;
  const auto& plain = fn_.nvmlDeviceGetGpuInstanceProfileInfo;
  const Item<Device> subject{device, "GPU instance profile", profile};
  if (versioned.fn != nullptr) {
    nvmlGpuInstanceProfileInfo_v2_t raw = {};
    raw.version = nvmlGpuInstanceProfileInfo_v2;
    const nvmlReturn_t ret = versioned.fn(device, profile, &raw);
    if (ret == NVML_SUCCESS) {
      GpuInstanceProfileInfo info = ToGpuInstanceProfile(raw);
      info.name = Bounded(raw.name, sizeof(raw.name));
      return info;
    }
    if (ret != NVML_ERROR_ARGUMENT_VERSION_MISMATCH || plain.fn == nullptr) {
      return Error(ret, versioned.name, Describe(subject));
    }
  }
  nvmlGpuInstanceProfileInfo_t raw = {};
  absl::Status status = Call(plain, subject, device, profile, &raw);
  if (!status.ok()) return status;
  return ToGpuInstanceProfile(raw);
}

absl::StatusOr<GpuInstance> DynamicLibrary::DeviceGetGpuInstanceById(
    Device device, unsigned id) {
  GpuInstance gpu_instance = nullptr;
  absl::Status status =
      Call(fn_.nvmlDeviceGetGpuInstanceById,
           Item<Device>{device, "GPU instance", id}, device, id, &gpu_instance);
  if (!status.ok()) return status;
  return gpu_instance;
}

absl::StatusOr<GpuInstanceInfo> DynamicLibrary::GpuInstanceGetInfo(
    GpuInstance gpu_instance) {
  nvmlGpuInstanceInfo_t raw = {};
  absl::Status status =
      Call(fn_.nvmlGpuInstanceGetInfo, gpu_instance, gpu_instance, &raw);
  if (!status.ok()) return status;
  return GpuInstanceInfo{raw.device, raw.id, raw.profileId, raw.placement.start,
                         raw.placement.size};
}

absl::StatusOr<ComputeInstanceProfileInfo>
DynamicLibrary::GpuInstanceGetComputeInstanceProfileInfo(
    GpuInstance gpu_instance, unsigned profile, unsigned engine_profile) {
  const auto& versioned = fn_.nvmlGpuInstanceGetComputeInstanceProfileInfoV;
  const auto& plain = fn_.nvmlGpuInstanceGetComputeInstanceProfileInfo;
  const Item<GpuInstance> subject{gpu_instance, "compute instance profile",
                                  profile};
  if (versioned.fn != nullptr) {
    nvmlComputeInstanceProfileInfo_v2_t raw = {};
    raw.version = nvmlComputeInstanceProfileInfo_v2;
    const nvmlReturn_t ret =
        versioned.fn(gpu_instance, profile, engine_profile, &raw);
    if (ret == NVML_SUCCESS) {
      ComputeInstanceProfileInfo info = ToComputeInstanceProfile(raw);
      info.name = Bounded(raw.name, sizeof(raw.name));
      return info;
    }
    if (ret != NVML_ERROR_ARGUMENT_VERSION_MISMATCH || plain.fn == nullptr) {
      return Error(ret, versioned.name, Describe(subject));
    }
  }
  nvmlComputeInstanceProfileInfo_t raw = {};
  absl::Status status =
      Call(plain, subject, gpu_instance, profile, engine_profile, &raw);
  if (!status.ok()) return status;
  return ToComputeInstanceProfile(raw);
}

absl::StatusOr<ComputeInstance>
DynamicLibrary::GpuInstanceGetComputeInstanceById(GpuInstance gpu_instance,
                                                  unsigned id) {
  ComputeInstance compute_instance = nullptr;
  absl::Status status =
      Call(fn_.nvmlGpuInstanceGetComputeInstanceById,
           Item<GpuInstance>{gpu_instance, "compute instance", id},
           gpu_instance, id, &compute_instance);
  if (!status.ok()) return status;
  return compute_instance;
}

absl::StatusOr<ComputeInstanceInfo> DynamicLibrary::ComputeInstanceGetInfo(
    ComputeInstance compute_instance) {
  nvmlComputeInstanceInfo_t raw = {};
  absl::Status status = Call(fn_.nvmlComputeInstanceGetInfo_v2,
                             compute_instance, compute_instance, &raw);
  if (!status.ok()) return status;
  return ComputeInstanceInfo{
      raw.device,    raw.gpuInstance,     raw.id,
      raw.profileId, raw.placement.start, raw.placement.size};
}

}  // namespace gpulet::nvml
