#include "src/cluster/extender/gone_pods.h"

#include <utility>

namespace gpulet::extender {
namespace {

std::string Uid(const nlohmann::json& pod) {
  if (!pod.is_object() || !pod.contains("metadata")) return "";
  const nlohmann::json& meta = pod["metadata"];
  if (!meta.is_object() || !meta.contains("uid") || !meta["uid"].is_string()) {
    return "";
  }
  return meta["uid"].get<std::string>();
}

bool Finished(const nlohmann::json& pod) {
  if (!pod.is_object() || !pod.contains("status")) return false;
  const nlohmann::json& status = pod["status"];
  if (!status.is_object() || !status.contains("phase") ||
      !status["phase"].is_string()) {
    return false;
  }
  const std::string& phase = status["phase"].get_ref<const std::string&>();
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace

void GonePods::Add(const nlohmann::json& pod) {
  std::string uid = Uid(pod);
  if (uid.empty() || uids_.contains(uid)) return;
  uids_.insert(uid);
  order_.push_back(std::move(uid));
  if (order_.size() > kMaxGonePods) {
    uids_.erase(order_.front());
    order_.pop_front();
  }
}

void GonePods::Replace(const std::vector<nlohmann::json>& pods) {
  absl::MutexLock lock(&mu_);
  for (const nlohmann::json& pod : pods) {
    if (Finished(pod)) Add(pod);
  }
}

void GonePods::Apply(const kube::WatchEvent& event) {
  absl::MutexLock lock(&mu_);
  if (event.type == kube::EventType::kDeleted ||
      ((event.type == kube::EventType::kModified ||
        event.type == kube::EventType::kAdded) &&
       Finished(event.object))) {
    Add(event.object);
  }
}

bool GonePods::Contains(absl::string_view uid) const {
  absl::MutexLock lock(&mu_);
  return uids_.find(uid) != uids_.end();
}

size_t GonePods::size() const {
  absl::MutexLock lock(&mu_);
  return uids_.size();
}

NodeView GonePods::Without(const NodeView& view) const {
  const std::vector<sharing::PendingPod>& pods = view.pending.pods;
  std::vector<bool> drop(pods.size(), false);
  bool any = false;
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < pods.size(); ++i) {
      drop[i] = !pods[i].uid.empty() && uids_.contains(pods[i].uid);
      any = any || drop[i];
    }
  }
  if (!any) return view;
  NodeView out = view;
  out.pending.pods.clear();
  for (size_t i = 0; i < pods.size(); ++i) {
    if (!drop[i]) out.pending.pods.push_back(pods[i]);
  }
  return out;
}

}  // namespace gpulet::extender
