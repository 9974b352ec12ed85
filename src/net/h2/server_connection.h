// ServerConnection: the server side of one HTTP/2 connection carrying gRPC
// calls of a Service, on nghttp2 (preface, SETTINGS, HPACK, flow control,
// PING). It does no I/O: the owner feeds it the bytes read from the socket
// (Receive) and writes what it produces (Produce), so it is driven the same
// way by the epoll loop and by the fuzz target.
//
// Per call it checks what gRPC requires (POST, content-type
// application/grpc..., one uncompressed message of at most 4 MiB, a valid
// grpc-timeout) and answers with response headers, the message and trailers
// (grpc-status, percent-encoded grpc-message), or trailers alone on an
// error. Bounds per connection: 100 concurrent streams, 16 KiB of headers
// per request, 4 MiB per request message.
//
// An asynchronous unary call (service.h) gets its deadline (grpc-timeout,
// else kDefaultAsyncDeadline) and a responder; its completion is collected
// by CollectAsync, and ending the call any other way (deadline, cancel,
// Shutdown, destruction) abandons it.
//
// Thread safety: none; one thread drives a connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "src/net/h2/service.h"

struct nghttp2_session;

namespace gpulet::h2 {

class LoopWaker;

class ServerConnection {
 public:
  // Borrows `service`, which must outlive the connection. Completions of
  // asynchronous calls wake `waker` (may be null: the owner calls
  // CollectAsync when it likes).
  explicit ServerConnection(const Service& service,
                            std::shared_ptr<LoopWaker> waker = nullptr);
  // Every stream still open reports Ended("connection closed").
  ~ServerConnection();
  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

  // The bytes read from the socket. False when the connection is broken
  // (bad preface, a connection-level protocol error): the owner writes what
  // Produce still gives (a GOAWAY) and closes.
  bool Receive(std::string_view bytes, Clock::time_point now);
  // Asks every stream's source for its next step.
  void WakeStreams();
  // Answers the asynchronous calls completed since.
  void CollectAsync();
  // Ends the calls whose deadline passed with DEADLINE_EXCEEDED; returns
  // the earliest deadline left (Clock::time_point::max() when none).
  Clock::time_point Expire(Clock::time_point now);
  // Ends every stream with OK ("server stopping"), answers calls still
  // being received with UNAVAILABLE and sends GOAWAY.
  void Shutdown();
  // Appends the bytes to send to `out` until it holds about `limit` bytes.
  // False on a fatal nghttp2 error.
  bool Produce(std::string& out, size_t limit);
  // Neither: the connection is over and may be closed.
  bool WantsRead() const;
  bool WantsWrite() const;
  size_t open_calls() const { return calls_.size(); }

  struct Call;  // one stream (server_connection.cc)

 private:
  friend struct Callbacks;
  void Dispatch(Call& call, Clock::time_point now);
  void Step(Call& call);
  // Starts an asynchronous call; answers it when it is already complete.
  void DispatchAsync(Call& call, const AsyncUnaryMethod& method,
                     std::string_view request, Clock::time_point now);
  void Collect(Call& call);
  // Ends `call` with `status`: trailers after what was sent, or a
  // trailers-only response when nothing was.
  void End(Call& call, const absl::Status& status, std::string_view why);
  void Respond(Call& call);
  void Closed(int32_t stream_id, uint32_t error_code);
  void SubmitTrailers(nghttp2_session* session, int32_t stream_id, Call& call);

  const Service& service_;
  const std::shared_ptr<LoopWaker> waker_;
  nghttp2_session* session_ = nullptr;
  absl::flat_hash_map<int32_t, std::unique_ptr<Call>> calls_;
  bool shut_down_ = false;
};

}  // namespace gpulet::h2
