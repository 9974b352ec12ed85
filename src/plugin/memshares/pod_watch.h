// PodWatch: the watch of one node's pods (a list and watch of the pods with
// spec.nodeName = the node, as the node agent's RBAC allows) for
// MemoryPublisher: the uid of each pod that is not Succeeded or Failed
// (PodResources has no uids), which of them ask for the shared resource
// (in any container's limits or requests), and a call of `on_change` on
// every change.
//
// Thread safety: Snapshot() may be called from any thread; Start() and
// RequestStop() from the owner's. `on_change` runs on the watch's thread,
// outside the watch's lock. The client is borrowed and must outlive the
// watch; the destructor stops the thread and joins it.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/net/kube/client.h"
#include "src/net/kube/list_watcher.h"

namespace gpulet::nodeagent {

class PodWatch {
 public:
  PodWatch(kube::Client& api, std::string node_name, std::string resource,
           std::function<void()> on_change);

  PodWatch(const PodWatch&) = delete;
  PodWatch& operator=(const PodWatch&) = delete;

  // Starts the watch's thread. REQUIRES: called once.
  void Start(const common::Clock& clock);
  // Asks the thread to stop, without waiting for it.
  void RequestStop();
  struct View {
    // The first list has been read: the maps below are the node's pods,
    // as of the last event (before it, they are empty and say nothing).
    bool listed = false;
    // "<namespace>/<name>" -> uid of the node's pods as last seen.
    std::map<std::string, std::string> uids;
    // The keys of uids whose pod asks for the resource.
    std::set<std::string> asking;
  };
  View Snapshot() const;

 private:
  void Run(const common::Clock& clock, std::stop_token stop);
  void Replace(const std::vector<nlohmann::json>& pods);
  void OnEvent(const kube::WatchEvent& event);
  void Add(const nlohmann::json& pod) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  kube::Client& api_;
  const std::string node_name_;
  const std::string resource_;
  const std::function<void()> on_change_;

  mutable absl::Mutex mu_;
  View view_ ABSL_GUARDED_BY(mu_);
  // Last: stopped and joined first on destruction.
  std::jthread thread_;
};

}  // namespace gpulet::nodeagent
