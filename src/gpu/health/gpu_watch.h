// The NVML side of the health monitor's thread: registering GPUs for the
// health events, probing an unhealthy GPU, and the signal that interrupts
// the NVML event wait. Used by health_monitor.cc only.
#ifndef GPULET_SRC_HEALTH_GPU_WATCH_H_
#define GPULET_SRC_HEALTH_GPU_WATCH_H_

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/health/health_monitor.h"
#include "src/gpu/health/recovery_policy.h"
#include "src/gpu/nvml/library.h"

namespace gpulet::health {

using GpuOfHandle = absl::flat_hash_map<nvml::Device, int>;

struct Registration {
  GpuOfHandle gpus;                   // registered handle -> NVML index
  std::vector<HealthEvent> failures;  // GPUs to report unhealthy at start
  std::vector<device::Gpu> failed;    // their GPUs, registered again later
};

// Registers `gpu`. Returns its handle, or nullptr when the GPU cannot
// produce the events at all (left unmonitored, as NVIDIA does since it
// stopped marking such GPUs unhealthy); other failures are errors.
absl::StatusOr<nvml::Device> RegisterGpu(nvml::Library& lib,
                                         nvml::EventSet& events,
                                         const device::Gpu& gpu);

// Registers every GPU; those that fail become failures reported at start.
Registration RegisterAll(nvml::Library& lib, nvml::EventSet& events,
                         const std::vector<device::Gpu>& gpus);

// Probes one GPU: NVML must answer on its handle. NVML_ERROR_GPU_IS_LOST and
// the other "device gone" codes map to Unavailable (nvml_status.h). A memory
// query refused as unsupported or not permitted still proves the GPU
// answers.
ProbeResult ProbeGpu(nvml::Library& lib, nvml::Device handle, int gpu);

// The signal that interrupts the monitor thread's NVML wait. A real-time
// signal nobody else sends; its handler does nothing and is installed
// without SA_RESTART, so the wait's poll() fails with EINTR.
int WakeSignal();
void InstallWakeSignalHandler();
// Lets the wake-up signal reach the calling thread (the daemon blocks its
// own signals before it starts threads; this one is not among them, but a
// caller may have blocked every signal).
void UnblockWakeSignal();

}  // namespace gpulet::health

#endif  // GPULET_SRC_HEALTH_GPU_WATCH_H_
