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

// Any container (init containers included) names `resource` in its limits
// or requests.
bool Asks(const Json& pod, const std::string& resource) {
  const Json* spec =
      pod.is_object() && pod.contains("spec") ? &pod["spec"] : nullptr;
  if (spec == nullptr || !spec->is_object()) return false;
  for (const char* list : {"containers", "initContainers"}) {
    if (!spec->contains(list) || !(*spec)[list].is_array()) continue;
    for (const Json& c : (*spec)[list]) {
      if (!c.is_object() || !c.contains("resources")) continue;
      const Json& r = c["resources"];
      if (!r.is_object()) continue;
      for (const char* kind : {"limits", "requests"}) {
        if (r.contains(kind) && r[kind].is_object() &&
            r[kind].contains(resource)) {
          return true;
        }
      }
    }
  }
  return false;
}

}  // namespace

PodWatch::PodWatch(kube::Client& api, std::string node_name,
                   std::string resource, std::function<void()> on_change)
    : api_(api),
      node_name_(std::move(node_name)),
      resource_(std::move(resource)),
      on_change_(std::move(on_change)) {}

void PodWatch::Start(const common::Clock& clock) {
  thread_ =
      std::jthread([this, &clock](std::stop_token stop) { Run(clock, stop); });
}

void PodWatch::RequestStop() { thread_.request_stop(); }

PodWatch::View PodWatch::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return view_;
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

void PodWatch::Add(const Json& pod) {
  const std::string key = absl::StrCat(StringAt(pod, "metadata", "namespace"),
                                       "/", StringAt(pod, "metadata", "name"));
  view_.uids[key] = StringAt(pod, "metadata", "uid");
  if (Asks(pod, resource_)) {
    view_.asking.insert(key);
  } else {
    view_.asking.erase(key);
  }
}

void PodWatch::Replace(const std::vector<Json>& pods) {
  absl::MutexLock lock(&mu_);
  view_ = View{};
  view_.listed = true;
  for (const Json& pod : pods) {
    if (!Terminal(pod)) Add(pod);
  }
}

void PodWatch::OnEvent(const kube::WatchEvent& event) {
  const std::string key =
      absl::StrCat(StringAt(event.object, "metadata", "namespace"), "/",
                   StringAt(event.object, "metadata", "name"));
  absl::MutexLock lock(&mu_);
  if (event.type == kube::EventType::kDeleted || Terminal(event.object)) {
    view_.uids.erase(key);
    view_.asking.erase(key);
  } else if (event.type == kube::EventType::kAdded ||
             event.type == kube::EventType::kModified) {
    Add(event.object);
  }
}

}  // namespace gpulet::nodeagent
