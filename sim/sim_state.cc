#include "sim/sim_state.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/machine_queries.h"
#include "sim/nvml_values.h"

namespace gpulet::sim {

SimState::SimState(MachineLoader loader) : loader_(std::move(loader)) {}

nvmlReturn_t SimState::Init(unsigned int flags, bool* first) {
  absl::MutexLock lock(&mu_);
  if (first != nullptr) *first = false;
  if (init_count_ > 0) {
    ++init_count_;
    return NVML_SUCCESS;
  }
  nvmlReturn_t result = LoadMachine(flags);
  if (result != NVML_SUCCESS) return result;
  init_count_ = 1;
  ++init_cycles_;
  if (first != nullptr) *first = true;
  return NVML_SUCCESS;
}

nvmlReturn_t SimState::LoadMachine(unsigned int /*flags*/) {
  const char* env = std::getenv(kMachineEnv);
  std::string spec = env != nullptr && *env != '\0' ? env : kDefaultMachine;
  absl::StatusOr<Machine> loaded = loader_(spec);
  if (!loaded.ok()) {
    machine_.reset();
    error_texts_.push_back(absl::StrCat(NvmlErrorText(NVML_ERROR_UNKNOWN), ": ",
                                        loaded.status().message()));
    unknown_error_text_ = error_texts_.back().c_str();
    return NVML_ERROR_UNKNOWN;
  }
  unknown_error_text_ = nullptr;
  machine_ = *std::move(loaded);
  if (!machine_->driver_loaded) {
    return machine_->init_error == NVML_SUCCESS ? NVML_ERROR_DRIVER_NOT_LOADED
                                                : machine_->init_error;
  }
  // A node whose driver is loaded but exposes no GPU (all of them bound to
  // vfio-pci, say) initialises and reports zero devices; that is the case
  // NVIDIA's plugin handles with "no devices found", so the simulator models
  // it for every init flag.
  return NVML_SUCCESS;
}

nvmlReturn_t SimState::Shutdown() {
  absl::MutexLock lock(&mu_);
  if (init_count_ == 0) return NVML_ERROR_UNINITIALIZED;
  if (--init_count_ == 0) FreeAllEventSets();
  return NVML_SUCCESS;
}

const char* SimState::ErrorString(unsigned int code) {
  absl::MutexLock lock(&mu_);
  if (code == NVML_ERROR_UNKNOWN && unknown_error_text_ != nullptr) {
    return unknown_error_text_;
  }
  return NvmlErrorText(code);
}

nvmlReturn_t SimState::WithMachine(MachineFn fn) {
  absl::MutexLock lock(&mu_);
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  return fn(*machine_, handles_);
}

nvmlReturn_t SimState::LookupDevice(FindFn find, nvmlDevice_t* device) {
  absl::MutexLock lock(&mu_);
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  DevicePosition position;
  nvmlReturn_t result = find(*machine_, &position);
  if (result != NVML_SUCCESS) return result;
  if (IsLost(position.gpu)) return NVML_ERROR_GPU_IS_LOST;
  *device = position.mig < 0 ? handles_.Gpu(position.gpu)
                             : handles_.Mig(position.gpu, position.mig);
  return NVML_SUCCESS;
}

bool SimState::IsLost(int gpu) const {
  return lost_uuids_.contains(machine_->gpus[gpu].uuid);
}

nvmlReturn_t SimState::ResolveDevice(nvmlDevice_t device, int* gpu,
                                     const MigDevice** mig) {
  const HandleObject* object = handles_.FindDevice(device);
  if (object == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (object->gpu < 0 ||
      static_cast<size_t>(object->gpu) >= machine_->gpus.size()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const Gpu& g = machine_->gpus[object->gpu];
  *mig = nullptr;
  if (object->kind == HandleKind::kMig) {
    if (!g.mig_enabled || object->mig < 0 ||
        static_cast<size_t>(object->mig) >= g.mig_devices.size()) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    *mig = &g.mig_devices[object->mig];
  }
  *gpu = object->gpu;
  return IsLost(object->gpu) ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
}

nvmlReturn_t SimState::WithDevice(nvmlDevice_t device, DeviceFn fn) {
  absl::MutexLock lock(&mu_);
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  int gpu = 0;
  const MigDevice* mig = nullptr;
  nvmlReturn_t result = ResolveDevice(device, &gpu, &mig);
  if (result != NVML_SUCCESS) return result;
  return fn(DeviceView{*machine_, machine_->gpus[gpu], gpu, mig, handles_});
}

nvmlReturn_t SimState::WithDevicePair(nvmlDevice_t a, nvmlDevice_t b,
                                      PairFn fn) {
  absl::MutexLock lock(&mu_);
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  int gpu_a = 0, gpu_b = 0;
  const MigDevice* mig_a = nullptr;
  const MigDevice* mig_b = nullptr;
  nvmlReturn_t result = ResolveDevice(a, &gpu_a, &mig_a);
  if (result == NVML_SUCCESS) result = ResolveDevice(b, &gpu_b, &mig_b);
  if (result != NVML_SUCCESS) return result;
  return fn(
      DeviceView{*machine_, machine_->gpus[gpu_a], gpu_a, mig_a, handles_},
      DeviceView{*machine_, machine_->gpus[gpu_b], gpu_b, mig_b, handles_});
}

nvmlReturn_t SimState::WithGpuInstance(nvmlGpuInstance_t instance,
                                       GpuInstanceFn fn) {
  absl::MutexLock lock(&mu_);
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  const HandleObject* object = handles_.FindGpuInstance(instance);
  if (object == nullptr || object->gpu < 0 ||
      static_cast<size_t>(object->gpu) >= machine_->gpus.size()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const Gpu& gpu = machine_->gpus[object->gpu];
  const MigDevice* first =
      gpu.mig_enabled ? FindMig(gpu, object->gi, std::nullopt) : nullptr;
  if (first == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (IsLost(object->gpu)) return NVML_ERROR_GPU_IS_LOST;
  const GpuInstanceProfile* profile =
      FindGiProfile(gpu, first->gpu_instance_profile_id);
  if (profile == nullptr) return NVML_ERROR_UNKNOWN;  // inconsistent machine
  return fn(GpuInstanceView{gpu, object->gpu, *first, *profile, handles_});
}

nvmlReturn_t SimState::WithComputeInstance(nvmlComputeInstance_t instance,
                                           ComputeInstanceFn fn) {
  absl::MutexLock lock(&mu_);
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  const HandleObject* object = handles_.FindComputeInstance(instance);
  if (object == nullptr || object->gpu < 0 ||
      static_cast<size_t>(object->gpu) >= machine_->gpus.size()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const Gpu& gpu = machine_->gpus[object->gpu];
  const MigDevice* mig =
      gpu.mig_enabled ? FindMig(gpu, object->gi, object->ci) : nullptr;
  if (mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (IsLost(object->gpu)) return NVML_ERROR_GPU_IS_LOST;
  const GpuInstanceProfile* gi_profile =
      FindGiProfile(gpu, mig->gpu_instance_profile_id);
  const ComputeInstanceProfile* ci_profile =
      FindCiProfile(gpu, mig->compute_instance_profile_id);
  if (gi_profile == nullptr || ci_profile == nullptr) {
    return NVML_ERROR_UNKNOWN;  // inconsistent machine
  }
  return fn(ComputeInstanceView{gpu, object->gpu, *mig, *gi_profile,
                                *ci_profile, handles_});
}

}  // namespace gpulet::sim
