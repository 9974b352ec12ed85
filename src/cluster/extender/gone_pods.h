// GonePods: the uids of pods that were deleted or have finished, from a
// kube::ListWatcher on the scheduled pods. A pending entry (pods the
// extender placed that the kubelet has not admitted yet) for such a pod
// will never be admitted, so filter and bind stop counting it at once
// instead of waiting for the node agent to prune it.
//
// Only evidence that a pod is gone counts (a DELETED event, a terminal
// phase); a pod the watch has not seen yet is never taken for gone. The set
// keeps the most recent kMaxGonePods uids.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "src/cluster/extender/placement.h"
#include "src/net/kube/watch_decoder.h"

namespace gpulet::extender {

inline constexpr size_t kMaxGonePods = 65536;

class GonePods {
 public:
  // A list of pods: the finished ones are gone (deleted ones are simply
  // missing from a list, so what is already known stays).
  void Replace(const std::vector<nlohmann::json>& pods);
  void Apply(const kube::WatchEvent& event);

  bool Contains(absl::string_view uid) const;
  size_t size() const;

  // `view` without the pending entries of gone pods.
  NodeView Without(const NodeView& view) const;

 private:
  void Add(const nlohmann::json& pod) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::set<std::string, std::less<>> uids_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);  // oldest first
};

}  // namespace gpulet::extender
