#include "src/gpu/health/health_reports.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gpulet::health {

HealthReports::Key HealthReports::KeyOf(const HealthEvent& event) {
  return Key{event.gpu_index, event.gpu_instance_id.value_or(kNoInstance),
             event.compute_instance_id.value_or(kNoInstance)};
}

bool HealthReports::Add(const HealthEvent& event) {
  const Key whole_gpu{event.gpu_index, kNoInstance, kNoInstance};
  if (reasons_.contains(whole_gpu)) return false;
  return reasons_.try_emplace(KeyOf(event), event.reason).second;
}

void HealthReports::Restore(const HealthEvent& event) {
  reasons_[KeyOf(event)] = event.reason;
}

void HealthReports::ForgetGpu(int gpu) {
  absl::erase_if(reasons_, [gpu](const auto& entry) {
    return std::get<0>(entry.first) == gpu;
  });
}

std::vector<HealthEvent> HealthReports::Export() const {
  std::vector<HealthEvent> out;
  for (const auto& [key, reason] : reasons_) {
    HealthEvent event;
    event.gpu_index = std::get<0>(key);
    if (std::get<1>(key) != kNoInstance) {
      event.gpu_instance_id = std::get<1>(key);
    }
    if (std::get<2>(key) != kNoInstance) {
      event.compute_instance_id = std::get<2>(key);
    }
    event.reason = reason;
    out.push_back(std::move(event));
  }
  std::sort(
      out.begin(), out.end(), [](const HealthEvent& a, const HealthEvent& b) {
        return std::tie(a.gpu_index, a.gpu_instance_id, a.compute_instance_id) <
               std::tie(b.gpu_index, b.gpu_instance_id, b.compute_instance_id);
      });
  return out;
}

std::string EventSubject(const HealthEvent& event) {
  std::string subject = absl::StrCat("GPU ", event.gpu_index);
  if (event.gpu_instance_id || event.compute_instance_id) {
    absl::StrAppend(&subject, " (");
    if (event.gpu_instance_id) {
      absl::StrAppend(&subject, "GPU instance ", *event.gpu_instance_id);
    }
    if (event.gpu_instance_id && event.compute_instance_id) {
      absl::StrAppend(&subject, ", ");
    }
    if (event.compute_instance_id) {
      absl::StrAppend(&subject, "compute instance ",
                      *event.compute_instance_id);
    }
    absl::StrAppend(&subject, ")");
  }
  return subject;
}

}  // namespace gpulet::health
