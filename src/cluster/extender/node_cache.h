// NodeCache: the extender's view of every node, kept current by a
// kube::ListWatcher on /api/v1/nodes (Replace after each list, Apply for
// each event) and by the extender's own annotation writes (Update with the
// Node the API server returned), so a pod bound a moment ago counts at
// once, before its watch event arrives.
//
// A node is replaced only by a newer resourceVersion (compared as numbers
// when both are, as etcd's revisions are), so a watch event older than the
// extender's own write cannot roll the view back.
//
// Thread safety: every method may be called from any thread. Views are
// immutable snapshots shared with readers, so filtering never holds the
// lock while it packs.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "src/cluster/extender/placement.h"
#include "src/net/kube/watch_decoder.h"

namespace gpulet::extender {

using NodeViewPtr = std::shared_ptr<const NodeView>;

class NodeCache {
 public:
  // Every node that exists now (a list): replaces the whole view.
  void Replace(const std::vector<nlohmann::json>& nodes);
  // One watch event: ADDED and MODIFIED update, DELETED removes.
  void Apply(const kube::WatchEvent& event);
  // A Node the API server answered a write with.
  void Update(const nlohmann::json& node);

  // The node's view; nullptr when the node is unknown.
  NodeViewPtr Find(absl::string_view name) const;
  size_t size() const;
  // True once a list has been applied.
  bool synced() const;

 private:
  void Put(const nlohmann::json& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, NodeViewPtr, std::less<>> nodes_ ABSL_GUARDED_BY(mu_);
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
};

// True when resourceVersion `a` is newer than `b`: numerically when both
// are decimal numbers, else whenever they differ.
bool NewerVersion(absl::string_view a, absl::string_view b);

}  // namespace gpulet::extender
