// Client: the operations gpulet needs from the Kubernetes API server, on
// JSON objects (nlohmann::json), over a Transport:
//
//   Get(path)                    one object
//   List(path, options)          every item, page by page (limit/continue),
//                                and the list's resourceVersion
//   Watch(path, options, fn)     events from a resourceVersion on, bookmarks
//                                included, decoded as the stream arrives
//   MergePatch(path, patch)      application/merge-patch+json (a Node's
//                                labels and annotations)
//   Create(path, body)           POST (pods/<name>/binding, ResourceSlices)
//   Replace(path, body)          PUT, the whole object with its
//                                resourceVersion (ResourceSlices)
//   Delete(path)                 DELETE
//
// Every request first waits for a token of the QPS/burst limiter. Failures
// come back as absl::Status carrying the API server's message and code
// (api_status.h). Retriable failures are retried with jittered exponential
// backoff, up to `max_attempts` in all: 429 Too Many Requests for every
// verb (after the server's Retry-After when given); connection failures,
// timeouts and 500/502/503/504 only for GET and merge patches, which are
// safe to repeat, and for DELETE (a repeat finds the object gone: NotFound).
// A POST or PUT that may have reached the server is not repeated. A 504
// "too large resource version" is not retried: the caller reads at another
// version (IsResourceVersionTooLarge()).
//
// Watch() does not retry: it returns when the stream ends and the caller
// (ListWatcher, list_watcher.h) decides whether to watch again or re-list.
// A watch on which nothing arrives for `watch_idle_timeout` (no event, no
// bookmark, no byte) ends with DeadlineExceeded naming the idle timeout: the
// connection is presumed dead (a load balancer dropped it, the server is
// stopped) rather than left to go stale until the watch's own 5-10 minutes
// run out.
//
// Thread safety: every method may be called from any number of threads;
// they share the limiter. The transport and the clock (through which the
// client reads the time and waits, common::Clock) are borrowed and must
// outlive the client.
#pragma once

#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "src/base/common/backoff.h"
#include "src/base/common/clock.h"
#include "src/net/kube/rate_limiter.h"
#include "src/net/kube/transport.h"
#include "src/net/kube/watch_decoder.h"

namespace gpulet::kube {

// The API retries' default: 250 ms doubling to 30 s, each delay stretched
// by up to half again.
inline constexpr common::BackoffPolicy kApiBackoff{
    .initial = absl::Milliseconds(250),
    .max = absl::Seconds(30),
    .jitter = 0.5};

// How long a watch may go without a byte before it is taken for dead. The
// API server's watch cache sends a bookmark to every watch that asks for
// them (ListWatcher does) once a minute, so a healthy quiet watch hears
// something at least every ~60 s; 15 s more covers the cache's one-second
// bookmark buckets and a loaded server. client-go has no such deadline on
// HTTP/1.1 (its HTTP/2 pings give up after 30 s + 15 s of silence).
inline constexpr absl::Duration kWatchIdleTimeout = absl::Seconds(75);

struct ClientOptions {
  double qps = 5;  // client-go's defaults
  int burst = 10;
  int max_attempts = 5;
  common::BackoffPolicy backoff = kApiBackoff;
  common::RandomFn random{};  // jitter source; default: a per-thread engine
  absl::Duration request_timeout = absl::Seconds(30);
  int64_t page_size = 500;
  // InfiniteDuration: none (a watch without bookmarks on a quiet set).
  absl::Duration watch_idle_timeout = kWatchIdleTimeout;
};

struct ListOptions {
  std::string label_selector{};
  std::string field_selector{};  // e.g. PodsOnNodeSelector(node)
  std::string resource_version{};
};

struct ListResult {
  std::vector<nlohmann::json> items{};
  std::string resource_version{};
};

struct WatchOptions {
  std::string label_selector{};
  std::string field_selector{};
  std::string resource_version{};  // from a list, or the last event seen
  bool allow_bookmarks = true;
  // The server ends the watch after this long (timeoutSeconds).
  absl::Duration timeout = absl::Minutes(5);
};

// Receives each watch event in order; returns false to end the watch.
using EventFn = std::function<bool(const WatchEvent&)>;

class Client {
 public:
  Client(Transport& transport, const common::Clock& clock,
         ClientOptions options = {});

  absl::StatusOr<nlohmann::json> Get(const std::string& path,
                                     std::stop_token stop = {});

  // Pages of options_.page_size when options.resource_version is "" (the
  // newest, a quorum read) or "0" (any version, from the server's cache);
  // a list at another version is not paged (paging would pin it to exactly
  // that version). A 410 Gone for a continue token (the list took longer
  // than the server keeps its snapshot) restarts the list once without
  // paging.
  absl::StatusOr<ListResult> List(const std::string& path,
                                  const ListOptions& options,
                                  std::stop_token stop = {});

  // Streams events to `on_event` until the server ends the watch or
  // `on_event` returns false (OK), `stop` is requested (Cancelled), the
  // server sends an ERROR event or refuses the watch (that Status; IsGone()
  // for an expired resourceVersion), or the stream is garbled
  // (InvalidArgument).
  absl::Status Watch(const std::string& path, const WatchOptions& options,
                     const EventFn& on_event, std::stop_token stop = {});

  absl::StatusOr<nlohmann::json> MergePatch(const std::string& path,
                                            const nlohmann::json& patch,
                                            std::stop_token stop = {});

  // POSTs `body`; the created object (for a binding, the API server's
  // Status) is returned.
  absl::StatusOr<nlohmann::json> Create(const std::string& path,
                                        const nlohmann::json& body,
                                        std::stop_token stop = {});

  // PUTs `body`, which carries metadata.resourceVersion; a stale version is
  // Aborted (409 Conflict). The stored object is returned.
  absl::StatusOr<nlohmann::json> Replace(const std::string& path,
                                         const nlohmann::json& body,
                                         std::stop_token stop = {});

  // DELETEs the object; NotFound when it is not there.
  absl::Status Delete(const std::string& path, std::stop_token stop = {});

 private:
  // Sends with limiter and retries; the 2xx response or the decoded error.
  absl::StatusOr<Response> Send(const Request& request, bool idempotent,
                                std::stop_token stop);
  absl::StatusOr<ListResult> ListPages(const std::string& path,
                                       const ListOptions& options,
                                       int64_t limit, std::stop_token stop);

  Transport& transport_;
  const common::Clock& clock_;
  const ClientOptions options_;
  RateLimiter limiter_;
};

}  // namespace gpulet::kube
