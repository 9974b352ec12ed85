#include "src/cluster/extender/node_cache.h"

#include <cstdint>
#include <utility>

#include "absl/strings/numbers.h"
#include "src/base/common/logging.h"

namespace gpulet::extender {

bool NewerVersion(absl::string_view a, absl::string_view b) {
  uint64_t x = 0, y = 0;
  if (absl::SimpleAtoi(a, &x) && absl::SimpleAtoi(b, &y)) return x > y;
  return a != b;
}

void NodeCache::Put(const nlohmann::json& node) {
  absl::StatusOr<NodeView> view = ReadNode(node);
  if (!view.ok()) {
    GPULET_LOG(WARNING) << "extender: ignoring a node object: "
                        << view.status().message();
    return;
  }
  auto it = nodes_.find(view->name);
  if (it != nodes_.end() &&
      !NewerVersion(view->resource_version, it->second->resource_version)) {
    return;
  }
  std::string name = view->name;
  nodes_[std::move(name)] = std::make_shared<const NodeView>(*std::move(view));
}

void NodeCache::Replace(const std::vector<nlohmann::json>& nodes) {
  absl::MutexLock lock(&mu_);
  // A re-list is the truth: older versions than the cache's own writes
  // cannot be in it, so start from empty.
  nodes_.clear();
  for (const nlohmann::json& node : nodes) Put(node);
  synced_ = true;
}

void NodeCache::Apply(const kube::WatchEvent& event) {
  absl::MutexLock lock(&mu_);
  if (event.type == kube::EventType::kDeleted) {
    absl::StatusOr<NodeView> view = ReadNode(event.object);
    if (view.ok()) nodes_.erase(view->name);
    return;
  }
  if (event.type == kube::EventType::kAdded ||
      event.type == kube::EventType::kModified) {
    Put(event.object);
  }
}

void NodeCache::Update(const nlohmann::json& node) {
  absl::MutexLock lock(&mu_);
  Put(node);
}

NodeViewPtr NodeCache::Find(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second;
}

size_t NodeCache::size() const {
  absl::MutexLock lock(&mu_);
  return nodes_.size();
}

bool NodeCache::synced() const {
  absl::MutexLock lock(&mu_);
  return synced_;
}

}  // namespace gpulet::extender
