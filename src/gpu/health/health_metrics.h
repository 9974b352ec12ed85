// HealthMetrics: the health monitor's side of gpulet's metrics
// (docs/metrics.md): Xid counts per GPU and code, health transitions by
// direction and cause, and the per-GPU health gauge.
//
// Created by the monitor with the GPUs it was given; sets every GPU's
// gpulet_gpu_healthy sample to 1 at construction and removes them at
// destruction, so a reload that drops a GPU drops its sample. All methods
// are no-ops when constructed without metrics.
//
// Ownership: borrows the GpuletMetrics (and its registry), which must
// outlive this object. Thread safety: methods may be called from any thread
// (the families lock); the monitor calls them from its own thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/base/metrics/gpulet_metrics.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/health/xid_policy.h"

namespace gpulet::health {

// The `xid` label of gpulet_xid_events_total: the Xid for 1..kMaxXidLabel
// (NVIDIA's catalog stays well below it), "other" for anything else, so a
// driver or simulator reporting garbage values cannot grow the label set
// past kMaxXidLabel + 1 values per GPU.
inline constexpr uint64_t kMaxXidLabel = 255;
std::string XidLabel(uint64_t xid);

class HealthMetrics {
 public:
  HealthMetrics(const metrics::GpuletMetrics* metrics,
                const std::vector<device::Gpu>& gpus);
  ~HealthMetrics();
  HealthMetrics(const HealthMetrics&) = delete;
  HealthMetrics& operator=(const HealthMetrics&) = delete;

  // An Xid event reported by NVML for the GPU with NVML index `gpu`,
  // whatever the policy decided.
  void OnXid(int gpu, uint64_t xid);
  // A HealthEvent delivered to the monitor's callback.
  void OnTransition(const HealthEvent& event);
  // Sets gpulet_gpu_healthy of GPU `gpu` without counting a transition (a
  // state carried over from an earlier monitor).
  void SetHealthy(int gpu, bool healthy);

  // The `gpu` label of GPU `gpu`: its UUID, or its index when NVML gave no
  // UUID.
  std::string GpuLabel(int gpu) const;

 private:
  const metrics::GpuletMetrics* const metrics_;
  std::map<int, std::string> labels_;  // NVML index -> label
};

}  // namespace gpulet::health
