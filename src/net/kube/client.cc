#include "src/net/kube/client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/logging.h"
#include "src/base/common/status_macros.h"
#include "src/net/kube/api_path.h"
#include "src/net/kube/api_status.h"
#include "src/net/kube/list_page.h"

namespace gpulet::kube {
namespace {

std::string Describe(const Request& request) {
  return absl::StrCat(request.method, " ", request.path);
}

bool Retriable(const absl::Status& status, bool idempotent) {
  // The caller reads at another version instead (ListWatcher).
  if (IsResourceVersionTooLarge(status)) return false;
  const int http = HttpCode(status);
  if (http == 429) return true;
  if (!idempotent) return false;
  if (http == 500 || http == 502 || http == 503 || http == 504) return true;
  return http == 0 && (status.code() == absl::StatusCode::kUnavailable ||
                       status.code() == absl::StatusCode::kDeadlineExceeded);
}

// A list at a given version ("" and "0" aside) is not paged: with a limit
// the server reads exactly that version from etcd (Gone once compacted),
// without one it serves anything at least as new, from its watch cache, as
// client-go's reflector relies on.
int64_t PageLimit(const ListOptions& options, int64_t page_size) {
  const std::string& rv = options.resource_version;
  return rv.empty() || rv == "0" ? page_size : 0;
}

// Invalid UTF-8 in a string becomes U+FFFD rather than an exception.
std::string Encode(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::Status Stopped(const Request& request) {
  return absl::CancelledError(absl::StrCat(Describe(request), ": stopped"));
}

}  // namespace

Client::Client(Transport& transport, const common::Clock& clock,
               ClientOptions options)
    : transport_(transport),
      clock_(clock),
      options_(std::move(options)),
      limiter_(options_.qps, options_.burst, clock) {}

absl::StatusOr<Response> Client::Send(const Request& request, bool idempotent,
                                      std::stop_token stop) {
  common::Backoff backoff(options_.backoff, options_.random);
  const std::string what = Describe(request);
  for (int attempt = 1;; ++attempt) {
    if (!clock_.Sleep(limiter_.Reserve(), stop)) return Stopped(request);
    absl::StatusOr<Response> response = transport_.Do(request, stop);
    absl::Status status =
        response.ok() ? StatusFromResponse(what, *response) : response.status();
    if (status.ok()) return response;
    if (attempt >= options_.max_attempts || !Retriable(status, idempotent)) {
      return status;
    }
    const absl::Duration wait = RetryAfter(status).value_or(backoff.Next());
    GPULET_VLOG(1) << ForLog(status) << "; retrying in " << wait << " (attempt "
                   << attempt + 1 << " of " << options_.max_attempts << ")";
    if (!clock_.Sleep(wait, stop)) return Stopped(request);
  }
}

absl::StatusOr<nlohmann::json> Client::Get(const std::string& path,
                                           std::stop_token stop) {
  Request request{
      .method = "GET", .path = path, .timeout = options_.request_timeout};
  GPULET_ASSIGN_OR_RETURN(Response response,
                          Send(request, /*idempotent=*/true, stop));
  return DecodeObject(Describe(request), response.body);
}

absl::StatusOr<ListResult> Client::ListPages(const std::string& path,
                                             const ListOptions& options,
                                             int64_t limit,
                                             std::stop_token stop) {
  ListResult result;
  std::string continue_token;
  do {
    QueryParams params = {{"labelSelector", options.label_selector},
                          {"fieldSelector", options.field_selector}};
    if (limit > 0) params.emplace_back("limit", absl::StrCat(limit));
    if (continue_token.empty()) {
      params.emplace_back("resourceVersion", options.resource_version);
    } else {
      params.emplace_back("continue", continue_token);
    }
    Request request{.method = "GET",
                    .path = WithQuery(path, params),
                    .timeout = options_.request_timeout};
    GPULET_ASSIGN_OR_RETURN(Response response,
                            Send(request, /*idempotent=*/true, stop));
    GPULET_ASSIGN_OR_RETURN(ListPage page,
                            DecodeListPage(Describe(request), response.body));
    for (nlohmann::json& item : page.items) {
      result.items.push_back(std::move(item));
    }
    result.resource_version = std::move(page.resource_version);
    continue_token = std::move(page.continue_token);
  } while (!continue_token.empty());
  return result;
}

absl::StatusOr<ListResult> Client::List(const std::string& path,
                                        const ListOptions& options,
                                        std::stop_token stop) {
  const int64_t limit = PageLimit(options, options_.page_size);
  absl::StatusOr<ListResult> result = ListPages(path, options, limit, stop);
  if (result.ok() || !IsGone(result.status()) || limit <= 0) {
    return result;
  }
  GPULET_VLOG(1) << ForLog(result.status()) << "; listing again without paging";
  return ListPages(path, options, /*limit=*/0, stop);
}

absl::Status Client::Watch(const std::string& path, const WatchOptions& options,
                           const EventFn& on_event, std::stop_token stop) {
  const int64_t timeout_seconds =
      std::max<int64_t>(1, absl::ToInt64Seconds(options.timeout));
  Request request{
      .method = "GET",
      .path = WithQuery(
          path, {{"watch", "true"},
                 {"labelSelector", options.label_selector},
                 {"fieldSelector", options.field_selector},
                 {"resourceVersion", options.resource_version},
                 {"allowWatchBookmarks", options.allow_bookmarks ? "true" : ""},
                 {"timeoutSeconds", absl::StrCat(timeout_seconds)}}),
      // The server ends the watch; this only bounds one that never ends.
      .timeout = options.timeout + options_.request_timeout,
      // What notices a connection that died without a word.
      .idle_timeout = options_.watch_idle_timeout};
  const std::string what = Describe(request);
  if (!clock_.Sleep(limiter_.Reserve(), stop)) return Stopped(request);

  WatchDecoder decoder;
  std::vector<WatchEvent> events;
  absl::Status ended;  // set by an ERROR event or a garbled stream
  bool caller_ended = false;
  auto deliver = [&]() {
    for (WatchEvent& event : events) {
      if (event.type == EventType::kError) {
        ended = StatusFromApiStatus(what, event.object);
        return false;
      }
      if (!on_event(event)) {
        caller_ended = true;
        return false;
      }
    }
    events.clear();
    return true;
  };
  auto on_chunk = [&](absl::string_view chunk) {
    ended = decoder.Feed(chunk, &events);
    return deliver() && ended.ok();
  };
  GPULET_ASSIGN_OR_RETURN(Response response,
                          transport_.Stream(request, on_chunk, stop));
  GPULET_RETURN_IF_ERROR(StatusFromResponse(what, response));
  if (caller_ended) return absl::OkStatus();
  if (!ended.ok()) return ended;
  if (stop.stop_requested()) return Stopped(request);
  GPULET_RETURN_IF_ERROR(decoder.Finish(&events));
  deliver();
  return ended;
}

absl::StatusOr<nlohmann::json> Client::MergePatch(const std::string& path,
                                                  const nlohmann::json& patch,
                                                  std::stop_token stop) {
  Request request{.method = "PATCH",
                  .path = path,
                  .content_type = "application/merge-patch+json",
                  .body = Encode(patch),
                  .timeout = options_.request_timeout};
  GPULET_ASSIGN_OR_RETURN(Response response,
                          Send(request, /*idempotent=*/true, stop));
  return DecodeObject(Describe(request), response.body);
}

absl::StatusOr<nlohmann::json> Client::Create(const std::string& path,
                                              const nlohmann::json& body,
                                              std::stop_token stop) {
  Request request{.method = "POST",
                  .path = path,
                  .content_type = "application/json",
                  .body = Encode(body),
                  .timeout = options_.request_timeout};
  GPULET_ASSIGN_OR_RETURN(Response response,
                          Send(request, /*idempotent=*/false, stop));
  return DecodeObject(Describe(request), response.body);
}

absl::StatusOr<nlohmann::json> Client::Replace(const std::string& path,
                                               const nlohmann::json& body,
                                               std::stop_token stop) {
  Request request{.method = "PUT",
                  .path = path,
                  .content_type = "application/json",
                  .body = Encode(body),
                  .timeout = options_.request_timeout};
  GPULET_ASSIGN_OR_RETURN(Response response,
                          Send(request, /*idempotent=*/false, stop));
  return DecodeObject(Describe(request), response.body);
}

absl::Status Client::Delete(const std::string& path, std::stop_token stop) {
  Request request{
      .method = "DELETE", .path = path, .timeout = options_.request_timeout};
  return Send(request, /*idempotent=*/true, stop).status();
}

}  // namespace gpulet::kube
