#include "src/net/kube/tls_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "src/base/common/clock.h"
#include "src/base/common/poll_timeout.h"

namespace gpulet::kube {
namespace {

// A socket BIO that sends with MSG_NOSIGNAL (OpenSSL's own writes with
// write(2), and a server hanging up would raise SIGPIPE) and counts what
// the kernel took.
TlsConnection::Io* IoOf(BIO* bio) {
  return static_cast<TlsConnection::Io*>(BIO_get_data(bio));
}

bool Retryable(int err) {
  return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

int BioWrite(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  const ssize_t n =
      ::send(IoOf(bio)->fd, data, static_cast<size_t>(size), MSG_NOSIGNAL);
  if (n > 0) IoOf(bio)->sent += static_cast<uint64_t>(n);
  if (n < 0 && Retryable(errno)) BIO_set_retry_write(bio);
  return static_cast<int>(n);
}

int BioRead(BIO* bio, char* data, int size) {
  BIO_clear_retry_flags(bio);
  const ssize_t n = ::recv(IoOf(bio)->fd, data, static_cast<size_t>(size), 0);
  if (n < 0 && Retryable(errno)) BIO_set_retry_read(bio);
  if (n == 0) BIO_set_flags(bio, BIO_FLAGS_IN_EOF);
  return static_cast<int>(n);
}

long BioCtrl(BIO* bio, int cmd, long, void*) {  // NOLINT(runtime/int)
  if (cmd == BIO_CTRL_FLUSH) return 1;
  if (cmd == BIO_CTRL_EOF) return BIO_test_flags(bio, BIO_FLAGS_IN_EOF) ? 1 : 0;
  return 0;
}

int BioCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

const BIO_METHOD* SocketBio() {
  static BIO_METHOD* const kMethod = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "gpulet socket");
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    return m;
  }();
  return kMethod;
}

// OpenSSL's error queue as text (the first error), then cleared.
std::string OpenSslError() {
  const unsigned long code = ERR_get_error();  // NOLINT(runtime/int)
  ERR_clear_error();
  if (code == 0) return "";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

bool IsIpAddress(const std::string& host) {
  unsigned char addr[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), addr) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

}  // namespace

TlsConnection::TlsConnection(const TlsConnectionOptions& options)
    : clock_(*options.clock),
      resolver_(options.resolver != nullptr ? *options.resolver
                                            : Resolver::System()),
      keepalive_(options.keepalive),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

TlsConnection::~TlsConnection() {
  if (ssl_ != nullptr) {
    // A close_notify if the socket takes it now; never waits.
    if (!failed_ && SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
    ERR_clear_error();
    SSL_free(ssl_);  // frees the BIO too
  }
  if (io_.fd >= 0) ::close(io_.fd);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void TlsConnection::Interrupt() {
  const uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof(one));
}

absl::Status TlsConnection::Wait(bool write, absl::Time deadline) {
  if (wake_fd_ < 0) return absl::ResourceExhaustedError("eventfd failed");
  pollfd fds[2] = {{io_.fd, static_cast<short>(write ? POLLOUT : POLLIN), 0},
                   {wake_fd_, POLLIN, 0}};
  while (true) {
    const int n = ::poll(fds, 2, common::PollTimeoutUntil(deadline, clock_));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::UnavailableError(absl::StrCat("poll: ", strerror(errno)));
    }
    if (fds[1].revents != 0) return absl::CancelledError("stopped");
    if (fds[0].revents != 0) return absl::OkStatus();
    if (n == 0 && clock_.Now() >= deadline) {
      return absl::DeadlineExceededError("timed out");
    }
  }
}

absl::Status TlsConnection::ConnectTcp(const std::string& host,
                                       const std::string& port,
                                       absl::Time deadline) {
  absl::StatusOr<Addresses> found =
      resolver_.Resolve(host, port, deadline, wake_fd_);
  if (!found.ok()) return found.status();
  absl::Status last = absl::UnavailableError(
      absl::StrCat("connect to ", name_, ": no address"));
  for (const SocketAddress& a : *found) {
    const int fd = ::socket(a.storage.ss_family,
                            SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    io_.fd = fd;
    int rc =
        ::connect(fd, reinterpret_cast<const sockaddr*>(&a.storage), a.length);
    absl::Status waited = absl::OkStatus();
    if (rc != 0 && errno == EINPROGRESS) {
      waited = Wait(/*write=*/true, deadline);
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (waited.ok() && rc == 0) {
      const int on = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
      waited = ApplyKeepAlive(fd, keepalive_);
      if (waited.ok()) return waited;
    }
    last = waited.ok() ? absl::UnavailableError(absl::StrCat(
                             "connect to ", name_, ": ", strerror(errno)))
                       : absl::Status(waited.code(),
                                      absl::StrCat("connect to ", name_, ": ",
                                                   waited.message()));
    ::close(fd);
    io_.fd = -1;
    if (!waited.ok()) break;  // out of time, stopped, or a bad option
  }
  return last;
}

absl::Status TlsConnection::Connect(SSL_CTX* ctx, const std::string& host,
                                    const std::string& port,
                                    absl::Time deadline) {
  name_ =
      absl::StrCat(host.find(':') != std::string::npos ? "[" : "", host,
                   host.find(':') != std::string::npos ? "]" : "", ":", port);
  if (absl::Status s = ConnectTcp(host, port, deadline); !s.ok()) return s;
  ERR_clear_error();
  ssl_ = SSL_new(ctx);
  BIO* bio = ssl_ != nullptr ? BIO_new(SocketBio()) : nullptr;
  if (bio == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("TLS handshake with ", name_, ": ", OpenSslError()));
  }
  BIO_set_data(bio, &io_);
  SSL_set_bio(ssl_, bio, bio);
  if (IsIpAddress(host)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl_, host.c_str());
    SSL_set1_host(ssl_, host.c_str());
  }
  return Handshake(deadline);
}

absl::Status TlsConnection::Handshake(absl::Time deadline) {
  while (true) {
    ERR_clear_error();
    const int ret = SSL_connect(ssl_);
    if (ret == 1) return absl::OkStatus();
    bool want_write = false;
    bool want_read = false;
    absl::Status failed =
        SslFailure(ret, "TLS handshake with", &want_write, &want_read);
    if (!failed.ok()) {
      const long verify = SSL_get_verify_result(ssl_);  // NOLINT(runtime/int)
      if (verify != X509_V_OK) {
        return absl::FailedPreconditionError(absl::StrCat(
            "TLS handshake with ", name_, ": certificate verify failed: ",
            X509_verify_cert_error_string(verify),
            " (the API server's certificate did not verify against the "
            "configured certificate authority)"));
      }
      return failed;
    }
    if (absl::Status s = Wait(want_write, deadline); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("TLS handshake with ", name_,
                                                 ": ", s.message()));
    }
  }
}

absl::Status TlsConnection::SslFailure(int ret, absl::string_view step,
                                       bool* retry_write, bool* retry_read) {
  const int saved_errno = errno;
  const int error = SSL_get_error(ssl_, ret);
  failed_ = error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE;
  switch (error) {
    case SSL_ERROR_WANT_READ:
      *retry_read = true;
      return absl::OkStatus();
    case SSL_ERROR_WANT_WRITE:
      *retry_write = true;
      return absl::OkStatus();
    case SSL_ERROR_ZERO_RETURN:
      return absl::UnavailableError(
          absl::StrCat(step, " ", name_, ": the server closed the connection"));
    case SSL_ERROR_SYSCALL: {
      std::string detail = OpenSslError();
      if (detail.empty()) {
        detail = saved_errno != 0 ? strerror(saved_errno)
                                  : "the server closed the connection";
      }
      return absl::UnavailableError(
          absl::StrCat(step, " ", name_, ": ", detail));
    }
    default:
      return absl::UnavailableError(
          absl::StrCat(step, " ", name_, ": ", OpenSslError()));
  }
}

absl::Status TlsConnection::Write(absl::string_view data, absl::Time deadline) {
  while (!data.empty()) {
    ERR_clear_error();
    errno = 0;
    size_t written = 0;
    const int ret = SSL_write_ex(ssl_, data.data(), data.size(), &written);
    if (ret == 1) {
      data.remove_prefix(written);
      continue;
    }
    bool want_write = false;
    bool want_read = false;
    if (absl::Status s = SslFailure(ret, "write to", &want_write, &want_read);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = Wait(want_write, deadline); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("write to ", name_, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> TlsConnection::Read(char* buffer, size_t size,
                                           absl::Time deadline) {
  while (true) {
    ERR_clear_error();
    errno = 0;
    size_t got = 0;
    const int ret = SSL_read_ex(ssl_, buffer, size, &got);
    if (ret == 1) return got;
    const int err = SSL_get_error(ssl_, ret);
    if (err == SSL_ERROR_ZERO_RETURN ||
        (err == SSL_ERROR_SYSCALL && errno == 0 && ERR_peek_error() == 0)) {
      failed_ = err != SSL_ERROR_ZERO_RETURN;
      return 0;
    }
    bool want_write = false;
    bool want_read = false;
    if (absl::Status s = SslFailure(ret, "read from", &want_write, &want_read);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = Wait(want_write, deadline); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("read from ", name_, ": ", s.message()));
    }
  }
}

bool TlsConnection::Usable() {
  if (ssl_ == nullptr || SSL_pending(ssl_) > 0) return false;
  pollfd fd = {io_.fd, POLLIN, 0};
  if (::poll(&fd, 1, 0) == 0) return true;
  // Readable: a closed connection, or a TLS record without data (a late
  // session ticket) that leaves it fit for use.
  ERR_clear_error();
  char byte;
  const int ret = SSL_peek(ssl_, &byte, 1);
  return ret <= 0 && SSL_get_error(ssl_, ret) == SSL_ERROR_WANT_READ;
}

}  // namespace gpulet::kube
