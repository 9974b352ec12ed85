#include "src/base/metrics/gpulet_metrics.h"

#include <algorithm>
#include <vector>

namespace gpulet::metrics {
namespace {

struct Spec {
  Family* GpuletMetrics::*member;
  MetricType type;
  const char* name;
  const char* help;
  std::vector<std::string> labels;
};

const std::vector<Spec>& Specs() {
  static const std::vector<Spec>* const kSpecs = new std::vector<Spec>{
      {&GpuletMetrics::device_healthy,
       MetricType::kGauge,
       "gpulet_device_healthy",
       "Whether a device advertised to the kubelet is healthy (1) or not (0).",
       {"resource", "device"}},
      {&GpuletMetrics::gpu_healthy,
       MetricType::kGauge,
       "gpulet_gpu_healthy",
       "Whether a GPU and all its MIG devices are healthy (1) or not (0).",
       {"gpu"}},
      {&GpuletMetrics::xid_events,
       MetricType::kCounter,
       "gpulet_xid_events_total",
       "Xid events reported by NVML, ignored ones included.",
       {"gpu", "xid"}},
      {&GpuletMetrics::health_transitions,
       MetricType::kCounter,
       "gpulet_health_transitions_total",
       "GPU or MIG device health changes decided by the health monitor.",
       {"direction", "reason"}},
      {&GpuletMetrics::allocations,
       MetricType::kCounter,
       "gpulet_allocations_total",
       "Successful Allocate calls from the kubelet (one per container).",
       {"resource"}},
      {&GpuletMetrics::allocated_devices,
       MetricType::kCounter,
       "gpulet_allocated_devices_total",
       "Devices handed out by successful Allocate calls.",
       {"resource"}},
      {&GpuletMetrics::registrations,
       MetricType::kCounter,
       "gpulet_registrations_total",
       "Registrations with the kubelet, by result (ok or error).",
       {"resource", "result"}},
      {&GpuletMetrics::kubelet_restarts,
       MetricType::kCounter,
       "gpulet_kubelet_restarts_total",
       "Kubelet restarts seen (kubelet.sock created again).",
       {}},
      {&GpuletMetrics::plugin_restarts,
       MetricType::kCounter,
       "gpulet_plugin_restarts_total",
       "Times a resource's plugin server was started again after its first "
       "start.",
       {"resource"}},
      {&GpuletMetrics::config_reloads,
       MetricType::kCounter,
       "gpulet_config_reloads_total",
       "Configuration reloads (SIGHUP), by result: ok (served) or error "
       "(rejected, nothing changed).",
       {"result"}},
      {&GpuletMetrics::node_config,
       MetricType::kGauge,
       "gpulet_node_config",
       "With per-node configurations (--config-dir): 1 for the named "
       "configuration in force (\"\" for none).",
       {"config"}},
      {&GpuletMetrics::passthrough_viable,
       MetricType::kGauge,
       "gpulet_passthrough_viable",
       "Whether a passthrough GPU's IOMMU group is viable (every function "
       "bound to vfio-pci or a bridge, group node present) (1) or not (0).",
       {"pci"}},
  };
  return *kSpecs;
}

absl::StatusOr<GpuletMetrics> RegisterSpecs(
    Registry& registry, const std::vector<Family * GpuletMetrics::*>& only) {
  GpuletMetrics out;
  for (const Spec& spec : Specs()) {
    if (!only.empty() &&
        std::find(only.begin(), only.end(), spec.member) == only.end()) {
      continue;
    }
    absl::StatusOr<Family*> family =
        spec.type == MetricType::kCounter
            ? registry.AddCounter(spec.name, spec.help, spec.labels)
            : registry.AddGauge(spec.name, spec.help, spec.labels);
    if (!family.ok()) return family.status();
    out.*spec.member = *family;
  }
  return out;
}

}  // namespace

absl::StatusOr<GpuletMetrics> GpuletMetrics::Register(Registry& registry) {
  return RegisterSpecs(registry, {});
}

absl::StatusOr<GpuletMetrics> GpuletMetrics::RegisterHealth(
    Registry& registry) {
  return RegisterSpecs(
      registry,
      {&GpuletMetrics::gpu_healthy, &GpuletMetrics::xid_events,
       &GpuletMetrics::health_transitions, &GpuletMetrics::config_reloads});
}

}  // namespace gpulet::metrics
