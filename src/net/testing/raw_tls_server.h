// RawTlsServer: a TLS server on 127.0.0.1 whose every byte the test writes,
// for tests of TlsTransport's HTTP handling (keep-alive, servers closing
// connections, truncated and oversized answers). Test-only.
//
// One thread accepts connections one at a time and runs the test's script
// on each (`index` counts from 0); the connection is closed when the
// script returns. The destructor shuts the listening socket and joins the
// thread, so a script must return on its own (usually: once the client
// closes).
//
// Thread safety: accepted() and requests() from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "src/net/testing/test_tls.h"

typedef struct ssl_st SSL;          // NOLINT
typedef struct ssl_ctx_st SSL_CTX;  // NOLINT

namespace gpulet::kube::tls_test {

class RawConnection {
 public:
  RawConnection(SSL* ssl, int fd, std::atomic<int>* requests)
      : ssl_(ssl), fd_(fd), requests_(requests) {}

  // The next request, head and Content-Length body; nullopt when the
  // client closed the connection (or the handshake failed).
  std::optional<std::string> ReadRequest();
  void Write(const std::string& bytes);
  // Sends close_notify and a FIN, and returns once the client's kernel has
  // acknowledged the FIN (so the client can see the close).
  void CloseWrite();
  // Blocks until the client closes its end.
  void WaitForClose();

 private:
  SSL* ssl_;
  int fd_;
  std::atomic<int>* requests_;
  std::string pending_;
};

class RawTlsServer {
 public:
  using Script = std::function<void(RawConnection& conn, int index)>;
  RawTlsServer(const KeyPair& leaf, Script script);
  ~RawTlsServer();

  std::string url() const;
  int accepted() const { return accepted_.load(); }
  int requests() const { return requests_.load(); }

 private:
  void Serve();

  Script script_;
  SSL_CTX* ctx_ = nullptr;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

}  // namespace gpulet::kube::tls_test
