#include "src/plugin/memshares/pod_watch.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/net/kube/api_path.h"
#include "src/plugin/memshares/node_json.h"

namespace gpulet::nodeagent {
namespace {

using Json = nlohmann::json;

// Succeeded or Failed: the kubelet holds no units for it.
bool Terminal(const Json& pod) {
  const std::string phase = StringAt(pod, "status", "phase");
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace

PodWatch::PodWatch(kube::Client& api, std::string node_name,
                   std::function<void()> on_change)
    : api_(api),
      node_name_(std::move(node_name)),
      on_change_(std::move(on_change)) {}

void PodWatch::Start(const common::Clock& clock) {
  thread_ =
      std::jthread([this, &clock](std::stop_token stop) { Run(clock, stop); });
}

void PodWatch::RequestStop() { thread_.request_stop(); }

std::map<std::string, std::string> PodWatch::Uids() const {
  absl::MutexLock lock(&mu_);
  return uids_;
}

void PodWatch::Run(const common::Clock& clock, std::stop_token stop) {
  absl::StatusOr<std::string> path = kube::PodsPath();
  if (!path.ok()) return;
  kube::ListOptions selectors;
  selectors.field_selector = kube::PodsOnNodeSelector(node_name_);
  kube::ListWatchCallbacks callbacks;
  callbacks.on_replace = [this](std::vector<Json> pods, const std::string&) {
    Replace(pods);
    on_change_();
  };
  callbacks.on_event = [this](const kube::WatchEvent& event) {
    OnEvent(event);
    on_change_();
  };
  kube::ListWatcher watcher(api_, clock, *path, std::move(selectors),
                            std::move(callbacks));
  watcher.Run(stop).IgnoreError();
}

void PodWatch::Replace(const std::vector<Json>& pods) {
  absl::MutexLock lock(&mu_);
  uids_.clear();
  for (const Json& pod : pods) {
    if (Terminal(pod)) continue;
    uids_[absl::StrCat(StringAt(pod, "metadata", "namespace"), "/",
                       StringAt(pod, "metadata", "name"))] =
        StringAt(pod, "metadata", "uid");
  }
}

void PodWatch::OnEvent(const kube::WatchEvent& event) {
  const std::string key =
      absl::StrCat(StringAt(event.object, "metadata", "namespace"), "/",
                   StringAt(event.object, "metadata", "name"));
  absl::MutexLock lock(&mu_);
  if (event.type == kube::EventType::kDeleted || Terminal(event.object)) {
    uids_.erase(key);
  } else if (event.type == kube::EventType::kAdded ||
             event.type == kube::EventType::kModified) {
    uids_[key] = StringAt(event.object, "metadata", "uid");
  }
}

}  // namespace gpulet::nodeagent
