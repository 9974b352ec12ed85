// GpuletMetrics: the metric families gpulet exports (docs/metrics.md), all
// registered in one place so names, help texts and labels cannot diverge
// between the parts that update them (daemon, plugin servers, health
// monitor).
//
// A GpuletMetrics holds borrowed pointers into a Registry; copy it freely,
// the registry must outlive every copy. Thread safety: the families are
// thread-safe (registry.h).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "src/base/metrics/registry.h"

namespace gpulet::metrics {

// Label values of gpulet_health_transitions_total.
inline constexpr char kDirectionUnhealthy[] = "unhealthy";
inline constexpr char kDirectionHealthy[] = "healthy";
// Label values of gpulet_registrations_total.
inline constexpr char kResultOk[] = "ok";
inline constexpr char kResultError[] = "error";

struct GpuletMetrics {
  // gpulet_device_healthy{resource, device}: 1 healthy, 0 unhealthy; one
  // sample per device advertised to the kubelet.
  Family* device_healthy = nullptr;
  // gpulet_gpu_healthy{gpu}: per GPU UUID; 0 while the GPU, or any MIG
  // device of it, is marked unhealthy.
  Family* gpu_healthy = nullptr;
  // gpulet_xid_events_total{gpu, xid}: every Xid NVML reported, ignored or
  // not.
  Family* xid_events = nullptr;
  // gpulet_health_transitions_total{direction, reason}.
  Family* health_transitions = nullptr;
  // gpulet_allocations_total{resource}: successful Allocate calls.
  Family* allocations = nullptr;
  // gpulet_allocated_devices_total{resource}: devices handed out by them.
  Family* allocated_devices = nullptr;
  // gpulet_registrations_total{resource, result}: Register calls to the
  // kubelet, result "ok" or "error".
  Family* registrations = nullptr;
  // gpulet_kubelet_restarts_total: kubelet.sock seen created again.
  Family* kubelet_restarts = nullptr;
  // gpulet_plugin_restarts_total{resource}: a resource's plugin server
  // started again (its socket deleted or replaced, kubelet restart). A
  // configuration reload changes a served resource in place and does not
  // count here.
  Family* plugin_restarts = nullptr;
  // gpulet_config_reloads_total{result}: SIGHUP reloads, "ok" when the new
  // configuration is served, "error" when it was rejected (nothing changed).
  Family* config_reloads = nullptr;
  // gpulet_node_config{config}: with per-node configurations, one sample,
  // 1, naming the configuration in force.
  Family* node_config = nullptr;
  // gpulet_passthrough_viable{pci}: per GPU selected for passthrough, 1 when
  // every function of its IOMMU group is bound to vfio-pci (or a bridge)
  // and its group node exists, else 0 (the reason is logged).
  Family* passthrough_viable = nullptr;

  // Registers every family (idempotent on the same registry).
  static absl::StatusOr<GpuletMetrics> Register(Registry& registry);
  // Registers only the health monitor's families (gpu_healthy, xid_events,
  // health_transitions) and config_reloads, for a process that has no
  // device-plugin servers (`gpulet dra`); the other members stay null.
  static absl::StatusOr<GpuletMetrics> RegisterHealth(Registry& registry);
};

// 1 or 0, for the health gauges.
inline double HealthValue(bool healthy) { return healthy ? 1 : 0; }

}  // namespace gpulet::metrics
