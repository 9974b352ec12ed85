#include "sim/handle_table.h"

namespace gpulet::sim {

HandleObject* HandleTable::GetOrCreate(const HandleObject& position) {
  Key key{position.kind, position.gpu, position.mig, position.gi, position.ci};
  std::unique_ptr<HandleObject>& slot = by_position_[key];
  if (slot == nullptr) {
    slot = std::make_unique<HandleObject>(position);
    by_pointer_[slot.get()] = slot.get();
  }
  return slot.get();
}

const HandleObject* HandleTable::Find(const void* pointer) const {
  auto it = by_pointer_.find(pointer);
  return it == by_pointer_.end() ? nullptr : it->second;
}

// The opaque handle types are never defined: a handle is a HandleObject's
// address, converted back only after Find() has vouched for it.
nvmlDevice_t HandleTable::Gpu(int gpu) {
  return reinterpret_cast<nvmlDevice_t>(
      GetOrCreate({HandleKind::kGpu, gpu, 0, 0, 0}));
}

nvmlDevice_t HandleTable::Mig(int gpu, int mig) {
  return reinterpret_cast<nvmlDevice_t>(
      GetOrCreate({HandleKind::kMig, gpu, mig, 0, 0}));
}

nvmlGpuInstance_t HandleTable::GpuInstance(int gpu, unsigned gi) {
  return reinterpret_cast<nvmlGpuInstance_t>(
      GetOrCreate({HandleKind::kGpuInstance, gpu, 0, gi, 0}));
}

nvmlComputeInstance_t HandleTable::ComputeInstance(int gpu, unsigned gi,
                                                   unsigned ci) {
  return reinterpret_cast<nvmlComputeInstance_t>(
      GetOrCreate({HandleKind::kComputeInstance, gpu, 0, gi, ci}));
}

const HandleObject* HandleTable::FindDevice(nvmlDevice_t handle) const {
  const HandleObject* object = Find(handle);
  if (object == nullptr) return nullptr;
  bool device =
      object->kind == HandleKind::kGpu || object->kind == HandleKind::kMig;
  return device ? object : nullptr;
}

const HandleObject* HandleTable::FindGpuInstance(
    nvmlGpuInstance_t handle) const {
  const HandleObject* object = Find(handle);
  return object && object->kind == HandleKind::kGpuInstance ? object : nullptr;
}

const HandleObject* HandleTable::FindComputeInstance(
    nvmlComputeInstance_t handle) const {
  const HandleObject* object = Find(handle);
  return object && object->kind == HandleKind::kComputeInstance ? object
                                                                : nullptr;
}

}  // namespace gpulet::sim
