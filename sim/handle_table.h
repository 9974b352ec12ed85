// HandleTable: the objects behind the opaque nvmlDevice_t, nvmlGpuInstance_t
// and nvmlComputeInstance_t values the simulator hands out.
//
// A handle object names a position in the machine (GPU index, MIG device
// index, GPU/compute instance ids), not the machine's data, so the same
// position always yields the same handle: handles compare equal across
// nvmlShutdown/nvmlInit cycles, as NVIDIA's do. Objects are never freed —
// a client may keep using a handle after shutdown (it gets
// NVML_ERROR_UNINITIALIZED) or after a machine switch (it gets
// NVML_ERROR_INVALID_ARGUMENT when the position no longer exists) — so the
// table only grows, by at most one object per position ever used.
//
// A pointer received from a client is looked up in the table before it is
// used; a pointer the table did not create is never dereferenced.
//
// Thread safety: none; SimState calls it with its mutex held.
#pragma once

#include <map>
#include <memory>
#include <tuple>

#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::sim {

enum class HandleKind { kGpu, kMig, kGpuInstance, kComputeInstance };

struct HandleObject {
  HandleKind kind = HandleKind::kGpu;
  int gpu = 0;      // index into Machine::gpus
  int mig = 0;      // index into Gpu::mig_devices (kMig only)
  unsigned gi = 0;  // GPU instance id (kGpuInstance, kComputeInstance)
  unsigned ci = 0;  // compute instance id (kComputeInstance)
};

class HandleTable {
 public:
  HandleTable() = default;
  HandleTable(const HandleTable&) = delete;
  HandleTable& operator=(const HandleTable&) = delete;

  nvmlDevice_t Gpu(int gpu);
  nvmlDevice_t Mig(int gpu, int mig);
  nvmlGpuInstance_t GpuInstance(int gpu, unsigned gi);
  nvmlComputeInstance_t ComputeInstance(int gpu, unsigned gi, unsigned ci);

  // The object behind a client's pointer, or nullptr if this table did not
  // create it (or created it as a different kind of handle).
  const HandleObject* FindDevice(nvmlDevice_t handle) const;
  const HandleObject* FindGpuInstance(nvmlGpuInstance_t handle) const;
  const HandleObject* FindComputeInstance(nvmlComputeInstance_t handle) const;

 private:
  using Key = std::tuple<HandleKind, int, int, unsigned, unsigned>;
  HandleObject* GetOrCreate(const HandleObject& position);
  const HandleObject* Find(const void* pointer) const;

  std::map<Key, std::unique_ptr<HandleObject>> by_position_;
  std::map<const void*, const HandleObject*> by_pointer_;
};

}  // namespace gpulet::sim
