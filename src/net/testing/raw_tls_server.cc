#include "src/net/testing/raw_tls_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpulet::kube::tls_test {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::cerr << "raw_tls_server: " << what << " failed\n";
    std::abort();
  }
}

size_t ContentLength(const std::string& head) {
  const std::string lower = absl::AsciiStrToLower(head);
  const size_t at = lower.find("\r\ncontent-length:");
  if (at == std::string::npos) return 0;
  const size_t start = at + 17;
  const size_t end = lower.find("\r\n", start);
  size_t n = 0;
  return absl::SimpleAtoi(
             absl::StripAsciiWhitespace(lower.substr(start, end - start)), &n)
             ? n
             : 0;
}

}  // namespace

std::optional<std::string> RawConnection::ReadRequest() {
  char buffer[4096];
  while (true) {
    const size_t head_end = pending_.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      const size_t total =
          head_end + 4 + ContentLength(pending_.substr(0, head_end + 2));
      if (pending_.size() >= total) {
        std::string request = pending_.substr(0, total);
        pending_.erase(0, total);
        ++*requests_;
        return request;
      }
    }
    const int n = SSL_read(ssl_, buffer, sizeof(buffer));
    if (n <= 0) {
      ERR_clear_error();
      return std::nullopt;
    }
    pending_.append(buffer, static_cast<size_t>(n));
  }
}

void RawConnection::Write(const std::string& bytes) {
  if (!bytes.empty()) {
    SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
  }
  ERR_clear_error();
}

void RawConnection::CloseWrite() {
  SSL_shutdown(ssl_);
  ERR_clear_error();
  ::shutdown(fd_, SHUT_WR);
  // FIN_WAIT1 lasts until the client's kernel acknowledges the FIN, which
  // it does as it queues the end of stream on the client's socket.
  while (true) {
    tcp_info info{};
    socklen_t len = sizeof(info);
    if (::getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
        info.tcpi_state != TCP_FIN_WAIT1) {
      return;
    }
    sched_yield();
  }
}

void RawConnection::WaitForClose() {
  char buffer[4096];
  while (SSL_read(ssl_, buffer, sizeof(buffer)) > 0) {
  }
  ERR_clear_error();
}

RawTlsServer::RawTlsServer(const KeyPair& leaf, Script script)
    : script_(std::move(script)) {
  ::signal(SIGPIPE, SIG_IGN);  // a client may hang up mid-answer
  ctx_ = SSL_CTX_new(TLS_server_method());
  Check(ctx_ != nullptr, "SSL_CTX_new");
  Check(SSL_CTX_use_certificate(ctx_, ReadCert(leaf.cert_pem).get()) == 1,
        "use_certificate");
  Check(SSL_CTX_use_PrivateKey(ctx_, ReadKey(leaf.key_pem).get()) == 1,
        "use_PrivateKey");

  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  Check(listen_fd_ >= 0, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  Check(
      ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0,
      "bind");
  Check(::listen(listen_fd_, 16) == 0, "listen");
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

RawTlsServer::~RawTlsServer() {
  ::shutdown(listen_fd_, SHUT_RDWR);  // wakes the blocked accept()
  thread_.join();
  ::close(listen_fd_);
  SSL_CTX_free(ctx_);
}

std::string RawTlsServer::url() const {
  return absl::StrCat("https://127.0.0.1:", port_);
}

void RawTlsServer::Serve() {
  for (int index = 0;; ++index) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    ++accepted_;
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      RawConnection conn(ssl, fd, &requests_);
      script_(conn, index);
      SSL_shutdown(ssl);
    }
    ERR_clear_error();
    SSL_free(ssl);
    ::close(fd);
  }
}

}  // namespace gpulet::kube::tls_test
