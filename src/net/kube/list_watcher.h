// ListWatcher: keeps a caller's view of a set of objects (the pods on this
// node, say) current, the way client-go's Reflector does: list, then watch
// from the list's resourceVersion; when a watch ends, watch again from the
// last version seen (bookmarks move it on even when nothing changes); when
// the server answers 410 Gone (that version is too old), list again and
// hand the caller the whole new set. Failures wait a jittered, growing
// backoff before the next attempt; a watch that went silent past the
// client's watch_idle_timeout (client.h) is such a failure, and the next
// watch resumes from the last version seen, without a list. Each watch asks the
// server to end it after a random 5 to 10 minutes (as client-go does), so the
// watches of many nodes do not all restart together.
//
// The resourceVersion each list asks for is the reflector's (ListVersion()):
// "0" for the first list, any version the server has, served from its watch
// cache rather than a quorum read of every object from etcd (it may be a
// little stale; the watch from the list's version brings it current); the
// last version seen for a re-list after a watch's 410, so the caller's view
// never goes back in time; and "" (the newest, a quorum read) at once when
// the server answers that a list's version is expired or too new for it.
//
//   ListWatcher pods(client, clock, "/api/v1/pods",
//                    {.field_selector = PodsOnNodeSelector(node)},
//                    {.on_replace = ..., .on_event = ...});
//   std::jthread t([&](std::stop_token s) { pods.Run(s); });
//
// Callbacks run on the thread that calls Run(), one at a time.
//
// Thread safety: Run() is called by one thread; the client and the clock
// (the backoff waits go through it) are borrowed and must outlive the
// watcher.
#pragma once

#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/net/kube/client.h"

namespace gpulet::kube {

struct ListWatchCallbacks {
  // Every object that exists now, after the first list and each re-list;
  // replaces whatever the caller knew.
  std::function<void(std::vector<nlohmann::json> items,
                     const std::string& resource_version)>
      on_replace{};
  // ADDED, MODIFIED and DELETED events (bookmarks are consumed here).
  std::function<void(const WatchEvent& event)> on_event{};
};

struct ListWatcherStats {
  int64_t lists = 0;    // lists that succeeded
  int64_t watches = 0;  // watches started
  int64_t gone = 0;     // 410 Gone answers that forced a re-list
  int64_t errors = 0;   // other failures (each followed by a backoff)
};

class ListWatcher {
 public:
  ListWatcher(Client& client, const common::Clock& clock, std::string path,
              ListOptions selectors, ListWatchCallbacks callbacks,
              common::BackoffPolicy backoff = kApiBackoff,
              common::RandomFn random = nullptr);

  // Lists and watches until `stop` is requested; then returns Cancelled.
  absl::Status Run(std::stop_token stop);

  // Counts so far. REQUIRES: called on the thread running Run(), or after
  // it returned.
  const ListWatcherStats& stats() const { return stats_; }
  // The resourceVersion the next watch starts from ("" before a list).
  const std::string& resource_version() const { return resource_version_; }

 private:
  absl::Status WatchOnce(std::stop_token stop);
  // Lists at ListVersion(), and again at "" when the server cannot serve
  // that version; on success hands the items to on_replace.
  absl::Status ListOnce(std::stop_token stop);
  std::string ListVersion() const;

  Client& client_;
  const common::Clock& clock_;
  const std::string path_;
  const ListOptions selectors_;
  const ListWatchCallbacks callbacks_;
  common::RandomFn random_;
  common::Backoff backoff_;
  std::string resource_version_;
  // The server could not list at resource_version_: list at "" next.
  bool version_unavailable_ = false;
  ListWatcherStats stats_;
};

}  // namespace gpulet::kube
