// Connection: one accepted socket, plain or TLS, read and written with a
// deadline. The socket is non-blocking; every wait is a poll(2) on the
// socket, the server's wake-up eventfd and the connection's own eviction
// eventfd, so a server shutting down, or making room for another client,
// ends every wait at once. Internal to Server.
//
// Thread safety: one thread per connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>

#include "src/base/common/unique_fd.h"
#include "src/net/http/client_identity.h"
#include "src/net/http/tls_context.h"

typedef struct ssl_st SSL;

namespace gpulet::http {

using Deadline = std::chrono::steady_clock::time_point;

class Connection {
 public:
  // Owns `fd`, borrows the eventfds. With a `ctx`, speaks TLS (Handshake
  // first).
  Connection(common::UniqueFd fd, int wake_fd, int evict_fd, SslCtxPtr ctx);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The TLS handshake (true at once without TLS). False on failure, at the
  // deadline or on shutdown.
  bool Handshake(Deadline deadline);
  // Who the client proved to be in the handshake (never verified without
  // TLS).
  ClientIdentity Client() const { return ClientIdentity::Of(ssl_); }
  // Up to `size` bytes into `buf`: their count; 0 when the peer closed;
  // -1 on failure, at the deadline or on shutdown.
  long Read(char* buf, size_t size, Deadline deadline);
  // All of `data`; false on failure, at the deadline or on shutdown.
  bool WriteAll(std::string_view data, Deadline deadline);
  // Ends the sending side and discards what the client still sends, until
  // it closes, for at most 2 s or until `deadline`: a client still writing
  // a refused body then reads the answer instead of a connection reset.
  void Linger(Deadline deadline);

 private:
  // Waits until the socket is ready for `events` (POLLIN/POLLOUT).
  bool Wait(short events, Deadline deadline);
  // After an SSL call returned `ret`: waits as OpenSSL asks and returns
  // true to retry; false when the call failed for good.
  bool WaitForSsl(int ret, Deadline deadline);

  const common::UniqueFd fd_;
  const int wake_fd_;
  const int evict_fd_;
  SslCtxPtr ctx_;
  SSL* ssl_ = nullptr;
};

}  // namespace gpulet::http
