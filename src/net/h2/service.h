// Service: what an h2 server answers, by gRPC method path
// ("/package.Service/Method"). Messages cross this seam serialized, without
// the 5-byte prefix; the transport frames them.
//
// The rule: a handler never blocks the loop on the network; work that waits
// on I/O (the API server, another process) uses the asynchronous kind.
//
// - A unary method gets the request message and returns the response
//   message or a status. It runs inline on the server's loop thread, so it
//   must be pure computation: it must not block.
// - An asynchronous unary method gets the request message and a
//   UnaryResponder, and returns at once (on the loop thread); the work goes
//   elsewhere (CallWorkers, call_workers.h) and completes the responder from
//   any thread. Meanwhile the loop serves every other call and stream. The
//   call's deadline is its grpc-timeout, or kDefaultAsyncDeadline when the
//   client sent none (the kubelet's device manager sends none); when it
//   passes first the server answers DEADLINE_EXCEEDED itself. A completion
//   after the deadline, the client's cancel or the server's stop is dropped.
// - A server-streaming method gets the request message and returns a
//   StreamSource (or a status, which ends the call at once). The loop asks
//   the source for its next step whenever Server::WakeStreams() was called,
//   and when the stream may send again (one message in flight at a time).
//
// Thread safety: the handlers and sources run on the loop thread only; the
// handlers may be called again before an earlier stream ended or an
// earlier asynchronous call was completed. UnaryResponder may be used from
// any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpulet::h2 {

using Clock = std::chrono::steady_clock;

// The deadline of an asynchronous call whose client sent no grpc-timeout:
// long beyond a healthy API server's answer, short enough that a kubelet
// admitting pods one at a time is not held up for long by an unreachable
// one.
inline constexpr std::chrono::seconds kDefaultAsyncDeadline{10};

class AsyncCall;  // the shared state of one call (async_call.h)

// One step of a stream: a message to send (shared, so every stream can send
// the same bytes), the end of the stream with a status, or nothing for now.
struct StreamStep {
  std::shared_ptr<const std::string> message;
  std::optional<absl::Status> end;
};

class StreamSource {
 public:
  virtual ~StreamSource() = default;
  // REQUIRES: the previous message was sent.
  virtual StreamStep Next() = 0;
  // The stream ended (`why`: the client cancelled or went away, the
  // deadline passed, the server stopped, or the source's own end); called
  // once, before the source is destroyed.
  virtual void Ended(std::string_view why) = 0;
};

using UnaryMethod =
    std::function<absl::StatusOr<std::string>(std::string_view request)>;
using StreamMethod =
    std::function<absl::StatusOr<std::unique_ptr<StreamSource>>(
        std::string_view request)>;

// The answer to one asynchronous call. Copies share the call; the first
// Complete wins and later ones are dropped, as is a Complete after the call
// ended (deadline, cancel, connection closed, server stopped). When the last
// copy goes without a Complete, the call is answered INTERNAL ("the
// handler dropped the call"), so a lost job never leaves it hanging.
class UnaryResponder {
 public:
  explicit UnaryResponder(std::shared_ptr<AsyncCall> call);
  // The response message, or the call's status.
  void Complete(absl::StatusOr<std::string> response) const;
  // When the server answers DEADLINE_EXCEEDED unless completed before.
  Clock::time_point deadline() const;

 private:
  struct Guard;  // answers INTERNAL when the last copy goes uncompleted
  std::shared_ptr<Guard> guard_;
};

using AsyncUnaryMethod =
    std::function<void(std::string_view request, UnaryResponder responder)>;

struct Service {
  absl::flat_hash_map<std::string, UnaryMethod> unary;
  absl::flat_hash_map<std::string, AsyncUnaryMethod> async_unary;
  // The deadline of an asynchronous call without grpc-timeout.
  Clock::duration async_default_deadline = kDefaultAsyncDeadline;
  absl::flat_hash_map<std::string, StreamMethod> streaming;
};

}  // namespace gpulet::h2
