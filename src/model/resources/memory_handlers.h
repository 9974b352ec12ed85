// The Allocate and GetPreferredAllocation handlers of the memory-unit
// resource (docs/sharing.md).
//
// Preferred allocation picks the GPU with sharing::ChooseGpu: free units
// per GPU come from the kubelet's own `available` list, the pending
// requests from the Node's annotations (through `pending`), so a
// container gets the GPU that keeps every pod already bound to the node
// fitting, without knowing which pod it is. The choice is recorded on the
// Node (through `reserve`) only if no pod was bound since that read, else
// it is made again: a pod bound in between counted this container as
// pending anywhere it fits, not on the GPU just chosen. When the pending
// requests cannot be read (`pending` fails: the API server is slow or
// unreachable), it fails with that error rather than choose blind; the
// kubelet then fails the pod's admission (docs/sharing.md). Otherwise it
// always answers: with no GPU keeping every pending request fitting, it
// packs by the policy.
//
// Allocate fails with `on_allocate`'s error when the answer cannot be
// recorded on the Node in time. It refuses units spanning GPUs, naming the
// units and GPUs, and
// tells the container its limit: GPULET_GPU_MEMORY_LIMIT in MiB, and
// gpushare's ALIYUN_COM_GPU_MEM_* variables when the resource has
// gpushare's name. With MPS (mps_root set) it also points the container
// at its GPU's MPS control daemon and sets the client's pinned device
// memory limit to the share, which CUDA enforces.
//
// Thread safety: the handlers are immutable and safe to call from many
// threads; `pending`, `reserve` and `on_allocate` must be too.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/gpu/mps/mps_paths.h"
#include "src/model/pluginapi/handlers.h"
#include "src/model/sharing/pack.h"

namespace gpulet::resources {

using sharing::kMemoryLimitEnv;
inline constexpr char kGpushareResource[] = "aliyun.com/gpu-mem";
inline constexpr char kGpushareIndexEnv[] = "ALIYUN_COM_GPU_MEM_IDX";
inline constexpr char kGpusharePodEnv[] = "ALIYUN_COM_GPU_MEM_POD";
inline constexpr char kGpushareContainerEnv[] = "ALIYUN_COM_GPU_MEM_CONTAINER";
inline constexpr char kGpushareDeviceEnv[] = "ALIYUN_COM_GPU_MEM_DEV";
// Choices a preferred allocation makes while pods keep being bound to the
// node under it (`reserve` answering Aborted); the last one is answered.
inline constexpr int kMaxPreferredChoices = 5;

struct MemoryHandlerOptions {
  std::string resource_name;
  int64_t unit_mib = 1024;
  sharing::Policy policy = sharing::Policy::kBinpack;
  // The requests pending on the node (docs/sharing.md); `refresh` asks for
  // the Node to be read again first, and then sets `node_version` to the
  // resourceVersion read. An error (the Node could not be read) fails the
  // preferred allocation with it. Null: nothing is pending.
  std::function<absl::StatusOr<std::vector<sharing::Request>>(
      bool refresh, std::string* node_version)>
      pending;
  // Told every preferred answer chosen against the pending requests
  // (GPU, units, unit IDs) with the `node_version` they were read at,
  // before it is returned: the node agent records the choice on the Node
  // unless the Node changed since (a pod was bound meanwhile that the
  // choice did not see), which it reports as Aborted; the choice is then
  // made again from a fresh read, up to kMaxPreferredChoices times. Any
  // other result keeps the choice. Null: choices are not recorded.
  std::function<absl::Status(const std::string& gpu_uuid, int64_t units,
                             const std::vector<std::string>& ids,
                             const std::string& node_version)>
      reserve;
  // flags.mpsRoot (host path) when sharing.memory.mps is enabled; empty:
  // no MPS.
  std::string mps_root;
  // With MPS: also CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, the share of the
  // GPU's units the container has.
  bool mps_compute_by_share = false;
  // Told the GPU, the number of units and their IDs of every Allocate, just
  // before it is answered (the node agent records it on the Node). An
  // error (not recorded in time) fails the Allocate with it.
  std::function<absl::Status(const std::string& gpu_uuid, int64_t units,
                             const std::vector<std::string>& ids)>
      on_allocate;
};

// Wraps `base` (the device-list strategy's answer for the units' GPU).
pluginapi::AllocateHandler MakeMemoryAllocateHandler(
    pluginapi::AllocateHandler base, MemoryHandlerOptions options);

pluginapi::PreferredHandler MakeMemoryPreferredHandler(
    MemoryHandlerOptions options);

}  // namespace gpulet::resources
