// FakeTransport: a Transport for tests that answers from a script and
// records what it was asked. Each request takes the next scripted reply:
// a Response, a transport error, or (for Stream) a list of body chunks
// delivered one by one. An unscripted request fails the test with
// Internal "no reply scripted".
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "src/net/kube/transport.h"

namespace gpulet::kube {

class FakeTransport final : public Transport {
 public:
  struct Reply {
    absl::Status error;               // non-OK: no response at all
    Response response;                // status and (non-streamed) body
    std::vector<std::string> chunks;  // a streamed 2xx body
  };

  void Add(Reply reply) {
    absl::MutexLock lock(&mu_);
    replies_.push_back(std::move(reply));
  }
  void AddResponse(int status, std::string body, std::string retry_after = "") {
    Add({.response = {.status = status,
                      .body = std::move(body),
                      .retry_after = std::move(retry_after)}});
  }
  void AddError(absl::Status error) { Add({.error = std::move(error)}); }
  void AddStream(std::vector<std::string> chunks, int status = 200) {
    Add({.response = {.status = status}, .chunks = std::move(chunks)});
  }

  std::vector<Request> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  size_t pending() const {
    absl::MutexLock lock(&mu_);
    return replies_.size();
  }

  absl::StatusOr<Response> Do(const Request& request,
                              std::stop_token = {}) override {
    Reply reply = Next(request);
    if (!reply.error.ok()) return reply.error;
    for (const std::string& chunk : reply.chunks) {
      reply.response.body += chunk;
    }
    return reply.response;
  }

  absl::StatusOr<Response> Stream(const Request& request,
                                  const ChunkFn& on_chunk,
                                  std::stop_token stop) override {
    Reply reply = Next(request);
    if (!reply.error.ok()) return reply.error;
    const int status = reply.response.status;
    if (status < 200 || status >= 300) return reply.response;
    for (const std::string& chunk : reply.chunks) {
      if (stop.stop_requested()) return absl::CancelledError("stopped");
      if (!on_chunk(chunk)) break;
    }
    return Response{.status = status};
  }

 private:
  Reply Next(const Request& request) {
    absl::MutexLock lock(&mu_);
    requests_.push_back(request);
    if (replies_.empty()) {
      return {
          .error = absl::InternalError(absl::StrCat(
              "no reply scripted for ", request.method, " ", request.path))};
    }
    Reply reply = std::move(replies_.front());
    replies_.pop_front();
    return reply;
  }

  mutable absl::Mutex mu_;
  std::deque<Reply> replies_ ABSL_GUARDED_BY(mu_);
  std::vector<Request> requests_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::kube
