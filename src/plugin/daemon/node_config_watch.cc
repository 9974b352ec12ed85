#include "src/plugin/daemon/node_config_watch.h"

#include <utility>
#include <vector>

#include "src/base/common/backoff.h"
#include "src/base/common/logging.h"
#include "src/net/kube/api_path.h"
#include "src/net/kube/list_watcher.h"

namespace gpulet::daemon {

using Json = nlohmann::json;

std::optional<std::string> NodeConfigLabel(const Json& node,
                                           const std::string& label) {
  if (!node.is_object() || !node.contains("metadata")) return std::nullopt;
  const Json& meta = node["metadata"];
  if (!meta.is_object() || !meta.contains("labels")) return std::nullopt;
  const Json& labels = meta["labels"];
  if (!labels.is_object() || !labels.contains(label)) return std::nullopt;
  const Json& value = labels[label];
  if (!value.is_string() || value.get<std::string>().empty()) {
    return std::nullopt;
  }
  return value.get<std::string>();
}

Json NodeConfigReportPatch(const std::string& applied,
                           const std::string& error) {
  Json annotations = Json::object();
  annotations[kNodeConfigAnnotation] = applied;
  annotations[kNodeConfigErrorAnnotation] =
      error.empty() ? Json(nullptr) : Json(error);
  return {{"metadata", {{"annotations", annotations}}}};
}

NodeConfigWatch::NodeConfigWatch(NodeConfigOptions options, kube::Client& api,
                                 const common::Clock& clock,
                                 std::function<void()> on_change)
    : options_(std::move(options)),
      api_(api),
      clock_(clock),
      on_change_(std::move(on_change)) {}

NodeConfigWatch::~NodeConfigWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  watch_.request_stop();
  reporter_.request_stop();
}

void NodeConfigWatch::Start() {
  watch_ = std::jthread([this](std::stop_token stop) { Watch(stop); });
  reporter_ = std::jthread([this](std::stop_token stop) { Reporter(stop); });
}

bool NodeConfigWatch::WaitListed(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto listed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return listed_; };
  return mu_.AwaitWithTimeout(absl::Condition(&listed), timeout);
}

std::optional<std::string> NodeConfigWatch::Label() const {
  absl::MutexLock lock(&mu_);
  return label_;
}

void NodeConfigWatch::Report(const std::string& applied,
                             const std::string& error) {
  absl::MutexLock lock(&mu_);
  pending_ = NodeConfigReportPatch(applied, error);
}

void NodeConfigWatch::See(const Json& node) {
  std::optional<std::string> value = NodeConfigLabel(node, options_.label);
  bool changed = false;
  {
    absl::MutexLock lock(&mu_);
    changed = !listed_ || value != label_;
    listed_ = true;
    label_ = std::move(value);
  }
  if (changed) on_change_();
}

void NodeConfigWatch::Watch(std::stop_token stop) {
  kube::ListOptions selectors;
  selectors.field_selector = "metadata.name=" + options_.node_name;
  kube::ListWatchCallbacks callbacks;
  callbacks.on_replace = [this](std::vector<Json> nodes, const std::string&) {
    // The Node gone from the list: no label.
    See(nodes.empty() ? Json::object() : nodes.front());
  };
  callbacks.on_event = [this](const kube::WatchEvent& event) {
    See(event.type == kube::EventType::kDeleted ? Json::object()
                                                : event.object);
  };
  kube::ListWatcher watcher(api_, clock_, "/api/v1/nodes", std::move(selectors),
                            std::move(callbacks));
  watcher.Run(stop).IgnoreError();
}

void NodeConfigWatch::Reporter(std::stop_token stop) {
  absl::StatusOr<std::string> path = kube::NodePath(options_.node_name);
  if (!path.ok()) return;  // ValidateNodeConfigOptions ran first
  common::Backoff backoff(kube::kApiBackoff);
  while (true) {
    Json patch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || pending_.has_value();
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      patch = *std::move(pending_);
      pending_.reset();
    }
    absl::StatusOr<Json> written = api_.MergePatch(*path, patch, stop);
    if (written.ok()) {
      backoff.Reset();
      continue;
    }
    GPULET_LOG(WARNING) << "cannot write node " << options_.node_name
                        << "'s configuration annotations: "
                        << written.status().message() << "; trying again";
    {
      absl::MutexLock lock(&mu_);
      if (!pending_.has_value()) pending_ = std::move(patch);  // not stale
    }
    if (!clock_.Sleep(backoff.Next(), stop)) return;
  }
}

}  // namespace gpulet::daemon
