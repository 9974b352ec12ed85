// Server: gRPC over HTTP/2 on a unix socket, serving one Service from a
// single thread of its own: an epoll loop over the listening socket, the
// connections (ServerConnection each, non-blocking) and an eventfd through
// which other threads wake it: WakeStreams, and the completion of an
// asynchronous call (service.h). Handlers run inline on that thread; the
// work of an asynchronous one goes wherever its handler sends it (the
// server owns no thread pool). An idle server sleeps in epoll_wait without
// a timeout (one only while a call has a deadline: a grpc-timeout, or any
// asynchronous call).
//
// Bounds: 64 connections (later ones are closed at once), 100 streams and
// 16 KiB of headers per connection, 4 MiB per request message, 256 KiB of
// output queued per connection before it stops producing more.
//
// Thread safety: Start/Stop from one controlling thread; WakeStreams and
// running from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "src/base/common/unique_fd.h"
#include "src/net/h2/service.h"

namespace gpulet::h2 {

class LoopWaker;

class Server {
 public:
  Server() = default;
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens on `path` (the caller removed anything there) and
  // serves `service` until Stop(). The socket is created with mode 0600.
  // UNAVAILABLE naming the path when it cannot listen; FAILED_PRECONDITION when
  // running.
  absl::Status Start(const std::string& path, Service service);
  // Every stream asks its source for the next step, on the loop thread.
  // REQUIRES: running (sources call it through watchers they remove when
  // they end, which is before Stop returns).
  void WakeStreams();
  // Ends every stream with OK, answers unfinished calls UNAVAILABLE (an
  // asynchronous call's later completion is dropped), sends
  // GOAWAY, gives the connections up to a second to take it, closes them
  // and joins the loop. The socket file is left. No-op when not running.
  void Stop();
  bool running() const { return thread_.joinable(); }

 private:
  void Loop(common::UniqueFd listener);
  void Signal();

  Service service_;  // of this run; set before the loop starts
  common::UniqueFd event_fd_;
  std::shared_ptr<LoopWaker> waker_;  // over event_fd_, closed on Stop
  std::atomic<bool> stopping_{false};
  std::atomic<bool> wake_{false};
  std::jthread thread_;
};

}  // namespace gpulet::h2
