#include "src/net/kube/list_watcher.h"

#include <utility>

#include "src/base/common/logging.h"
#include "src/net/kube/api_status.h"

namespace gpulet::kube {
namespace {

constexpr absl::Duration kMinWatchTimeout = absl::Minutes(5);

}  // namespace

ListWatcher::ListWatcher(Client& client, const common::Clock& clock,
                         std::string path, ListOptions selectors,
                         ListWatchCallbacks callbacks,
                         common::BackoffPolicy backoff, common::RandomFn random)
    : client_(client),
      clock_(clock),
      path_(std::move(path)),
      selectors_(std::move(selectors)),
      callbacks_(std::move(callbacks)),
      random_(random ? std::move(random) : common::DefaultRandom),
      backoff_(backoff, random_) {}

absl::Status ListWatcher::WatchOnce(std::stop_token stop) {
  WatchOptions options{.label_selector = selectors_.label_selector,
                       .field_selector = selectors_.field_selector,
                       .resource_version = resource_version_,
                       .allow_bookmarks = true,
                       .timeout = kMinWatchTimeout};
  options.timeout += kMinWatchTimeout * random_();
  ++stats_.watches;
  return client_.Watch(
      path_, options,
      [&](const WatchEvent& event) {
        std::string rv = ResourceVersionOf(event.object);
        if (!rv.empty()) resource_version_ = std::move(rv);
        if (event.type != EventType::kBookmark && callbacks_.on_event) {
          callbacks_.on_event(event);
        }
        backoff_.Reset();
        return true;
      },
      stop);
}

std::string ListWatcher::ListVersion() const {
  if (version_unavailable_) return "";
  if (resource_version_.empty()) return "0";
  return resource_version_;
}

absl::Status ListWatcher::ListOnce(std::stop_token stop) {
  ListOptions options = selectors_;
  options.resource_version = ListVersion();
  absl::StatusOr<ListResult> list = client_.List(path_, options, stop);
  if (!list.ok() && !options.resource_version.empty() &&
      (IsGone(list.status()) || IsResourceVersionTooLarge(list.status()))) {
    GPULET_VLOG(1) << ForLog(list.status()) << "; listing " << path_
                   << " at the newest version";
    version_unavailable_ = true;
    options.resource_version.clear();
    list = client_.List(path_, options, stop);
  }
  if (!list.ok()) return list.status();
  ++stats_.lists;
  version_unavailable_ = false;
  resource_version_ = list->resource_version;
  if (callbacks_.on_replace) {
    callbacks_.on_replace(std::move(list->items), resource_version_);
  }
  return absl::OkStatus();
}

absl::Status ListWatcher::Run(std::stop_token stop) {
  bool need_list = true;
  while (!stop.stop_requested()) {
    absl::Status status;
    if (need_list) {
      status = ListOnce(stop);
      if (status.ok()) {
        need_list = false;
        backoff_.Reset();
        continue;
      }
    } else {
      status = WatchOnce(stop);
      if (status.ok()) continue;  // the server ended the watch: go on
      if (IsGone(status)) {
        ++stats_.gone;
        need_list = true;
        GPULET_VLOG(1) << ForLog(status) << "; listing " << path_ << " again";
        continue;
      }
    }
    if (stop.stop_requested()) break;
    ++stats_.errors;
    const absl::Duration wait = backoff_.Next();
    GPULET_LOG(WARNING) << ForLog(status) << "; retrying in " << wait;
    if (!clock_.Sleep(wait, stop)) break;
  }
  return absl::CancelledError("list-watch of " + path_ + " stopped");
}

}  // namespace gpulet::kube
