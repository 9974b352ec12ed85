// MemoryPublisher's watch of the node's pods: their uids (PodResources
// has none) and a sync on every change.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/net/kube/api_path.h"
#include "src/net/kube/list_watcher.h"
#include "src/plugin/memshares/memory_publisher.h"
#include "src/plugin/memshares/node_json.h"

namespace gpulet::nodeagent {

using Json = nlohmann::json;

void MemoryPublisher::WatchPods(const common::Clock& clock,
                                std::stop_token stop) {
  absl::StatusOr<std::string> path = kube::PodsPath();
  if (!path.ok()) return;
  kube::ListOptions selectors;
  selectors.field_selector = kube::PodsOnNodeSelector(options_.node_name);
  kube::ListWatchCallbacks callbacks;
  callbacks.on_replace = [this](std::vector<Json> pods, const std::string&) {
    ReplacePods(pods);
    Wake();
  };
  callbacks.on_event = [this](const kube::WatchEvent& event) {
    OnPodEvent(event);
    Wake();
  };
  kube::ListWatcher watcher(api_, clock, *path, std::move(selectors),
                            std::move(callbacks));
  watcher.Run(stop).IgnoreError();
}

namespace {

// Succeeded or Failed: the kubelet holds no units for it.
bool Terminal(const Json& pod) {
  const std::string phase = StringAt(pod, "status", "phase");
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace

void MemoryPublisher::ReplacePods(const std::vector<Json>& pods) {
  absl::MutexLock lock(&mu_);
  pod_uids_.clear();
  for (const Json& pod : pods) {
    if (Terminal(pod)) continue;
    pod_uids_[absl::StrCat(StringAt(pod, "metadata", "namespace"), "/",
                           StringAt(pod, "metadata", "name"))] =
        StringAt(pod, "metadata", "uid");
  }
}

void MemoryPublisher::OnPodEvent(const kube::WatchEvent& event) {
  const std::string key =
      absl::StrCat(StringAt(event.object, "metadata", "namespace"), "/",
                   StringAt(event.object, "metadata", "name"));
  absl::MutexLock lock(&mu_);
  if (event.type == kube::EventType::kDeleted || Terminal(event.object)) {
    pod_uids_.erase(key);
  } else if (event.type == kube::EventType::kAdded ||
             event.type == kube::EventType::kModified) {
    pod_uids_[key] = StringAt(event.object, "metadata", "uid");
  }
}

}  // namespace gpulet::nodeagent
