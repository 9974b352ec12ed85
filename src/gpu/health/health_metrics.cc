#include "src/gpu/health/health_metrics.h"

#include "absl/strings/str_cat.h"

namespace gpulet::health {

HealthMetrics::HealthMetrics(const metrics::GpuletMetrics* metrics,
                             const std::vector<device::Gpu>& gpus)
    : metrics_(metrics) {
  for (const device::Gpu& gpu : gpus) {
    const int index = static_cast<int>(gpu.index);
    labels_[index] = gpu.uuid.empty() ? absl::StrCat(index) : gpu.uuid;
  }
  if (metrics_ == nullptr || metrics_->gpu_healthy == nullptr) return;
  for (const auto& [index, label] : labels_) {
    metrics_->gpu_healthy->Set({label}, metrics::HealthValue(true));
  }
}

HealthMetrics::~HealthMetrics() {
  if (metrics_ == nullptr || metrics_->gpu_healthy == nullptr) return;
  for (const auto& [index, label] : labels_) {
    metrics_->gpu_healthy->Remove({label});
  }
}

std::string HealthMetrics::GpuLabel(int gpu) const {
  auto it = labels_.find(gpu);
  return it == labels_.end() ? absl::StrCat(gpu) : it->second;
}

std::string XidLabel(uint64_t xid) {
  return xid >= 1 && xid <= kMaxXidLabel ? absl::StrCat(xid)
                                         : std::string("other");
}

void HealthMetrics::OnXid(int gpu, uint64_t xid) {
  if (metrics_ == nullptr || metrics_->xid_events == nullptr) return;
  metrics_->xid_events->Add({GpuLabel(gpu), XidLabel(xid)});
}

void HealthMetrics::SetHealthy(int gpu, bool healthy) {
  if (metrics_ == nullptr || metrics_->gpu_healthy == nullptr) return;
  metrics_->gpu_healthy->Set({GpuLabel(gpu)}, metrics::HealthValue(healthy));
}

void HealthMetrics::OnTransition(const HealthEvent& event) {
  if (metrics_ == nullptr) return;
  if (metrics_->health_transitions != nullptr) {
    metrics_->health_transitions->Add({event.healthy
                                           ? metrics::kDirectionHealthy
                                           : metrics::kDirectionUnhealthy,
                                       CauseLabel(event.cause)});
  }
  if (metrics_->gpu_healthy != nullptr) {
    metrics_->gpu_healthy->Set({GpuLabel(event.gpu_index)},
                               metrics::HealthValue(event.healthy));
  }
}

}  // namespace gpulet::health
