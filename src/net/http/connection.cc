#include "src/net/http/connection.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace gpulet::http {

Connection::Connection(common::UniqueFd fd, int wake_fd, int evict_fd,
                       SslCtxPtr ctx)
    : fd_(std::move(fd)),
      wake_fd_(wake_fd),
      evict_fd_(evict_fd),
      ctx_(std::move(ctx)) {
  if (ctx_ != nullptr) {
    ssl_ = SSL_new(ctx_.get());
    if (ssl_ != nullptr) SSL_set_fd(ssl_, fd_.get());
  }
}

Connection::~Connection() {
  if (ssl_ != nullptr) {
    // A close_notify when the socket takes it at once; never waited for.
    if (SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
    SSL_free(ssl_);
    ERR_clear_error();
  }
}

bool Connection::Wait(short events, Deadline deadline) {
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd fds[3] = {
        {fd_.get(), events, 0}, {wake_fd_, POLLIN, 0}, {evict_fd_, POLLIN, 0}};
    const int n = ::poll(
        fds, 3, static_cast<int>(std::min<int64_t>(left.count(), 60'000)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[1].revents != 0 || fds[2].revents != 0) return false;
    if (fds[0].revents != 0) return true;
  }
}

bool Connection::WaitForSsl(int ret, Deadline deadline) {
  switch (SSL_get_error(ssl_, ret)) {
    case SSL_ERROR_WANT_READ:
      return Wait(POLLIN, deadline);
    case SSL_ERROR_WANT_WRITE:
      return Wait(POLLOUT, deadline);
    default:
      ERR_clear_error();
      return false;
  }
}

bool Connection::Handshake(Deadline deadline) {
  if (ctx_ == nullptr) return true;
  if (ssl_ == nullptr) return false;
  while (true) {
    const int ret = SSL_accept(ssl_);
    if (ret == 1) return true;
    if (!WaitForSsl(ret, deadline)) return false;
  }
}

long Connection::Read(char* buf, size_t size, Deadline deadline) {
  while (true) {
    if (ssl_ != nullptr) {
      const int ret = SSL_read(ssl_, buf, static_cast<int>(size));
      if (ret > 0) return ret;
      if (SSL_get_error(ssl_, ret) == SSL_ERROR_ZERO_RETURN) return 0;
      if (!WaitForSsl(ret, deadline)) return -1;
      continue;
    }
    const ssize_t n = ::recv(fd_.get(), buf, size, 0);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    if (!Wait(POLLIN, deadline)) return -1;
  }
}

bool Connection::WriteAll(std::string_view data, Deadline deadline) {
  while (!data.empty()) {
    if (ssl_ != nullptr) {
      const int ret =
          SSL_write(ssl_, data.data(),
                    static_cast<int>(std::min<size_t>(data.size(), 1 << 20)));
      if (ret > 0) {
        data.remove_prefix(static_cast<size_t>(ret));
      } else if (!WaitForSsl(ret, deadline)) {
        return false;
      }
      continue;
    }
    const ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!Wait(POLLOUT, deadline)) return false;
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace gpulet::http

namespace gpulet::http {

void Connection::Linger(Deadline deadline) {
  if (ssl_ != nullptr && SSL_is_init_finished(ssl_)) {
    SSL_shutdown(ssl_);
    ERR_clear_error();
  }
  ::shutdown(fd_.get(), SHUT_WR);
  const Deadline until = std::min(
      deadline, std::chrono::steady_clock::now() + std::chrono::seconds(2));
  char buf[4096];
  while (true) {
    const ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (n > 0) continue;
    if (n == 0) return;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return;
    if (!Wait(POLLIN, until)) return;
  }
}

}  // namespace gpulet::http
