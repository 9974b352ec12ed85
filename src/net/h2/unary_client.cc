#include "src/net/h2/unary_client.h"

#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "src/base/common/clock.h"
#include "src/base/common/poll_timeout.h"
#include "src/net/h2/grpc_wire.h"

namespace gpulet::h2 {

namespace {

constexpr absl::Duration kCancelPoll = absl::Milliseconds(50);

// One call's state, reached from nghttp2's callbacks through user_data.
struct Exchange {
  std::string out;  // the request: prefix and message
  size_t sent = 0;
  std::string body;  // the response's DATA
  std::string http_status, grpc_status, grpc_message;
  bool closed = false;
  uint32_t reset_code = 0;
};

nghttp2_nv Nv(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())),
          name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

ssize_t ReadRequest(nghttp2_session*, int32_t, uint8_t* buf, size_t length,
                    uint32_t* flags, nghttp2_data_source* source, void*) {
  auto* x = static_cast<Exchange*>(source->ptr);
  const size_t n = std::min(length, x->out.size() - x->sent);
  std::memcpy(buf, x->out.data() + x->sent, n);
  x->sent += n;
  if (x->sent == x->out.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

int OnHeader(nghttp2_session*, const nghttp2_frame*, const uint8_t* name,
             size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
             void* user_data) {
  auto* x = static_cast<Exchange*>(user_data);
  const std::string_view n(reinterpret_cast<const char*>(name), namelen);
  const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":status") x->http_status = v;
  if (n == "grpc-status") x->grpc_status = v;
  if (n == "grpc-message") x->grpc_message = PercentDecode(std::string(v));
  return 0;
}

int OnData(nghttp2_session*, uint8_t, int32_t, const uint8_t* data, size_t len,
           void* user_data) {
  auto* x = static_cast<Exchange*>(user_data);
  if (x->body.size() + len > kMaxMessageSize + kPrefixSize) {
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  x->body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int OnClose(nghttp2_session*, int32_t, uint32_t error_code, void* user_data) {
  auto* x = static_cast<Exchange*>(user_data);
  x->closed = true;
  x->reset_code = error_code;
  return 0;
}

nghttp2_session_callbacks* ClientCallbacks() {
  static nghttp2_session_callbacks* const callbacks = [] {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, OnData);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, OnClose);
    return cb;
  }();
  return callbacks;
}

int Connect(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

// The call's outcome once the stream closed.
absl::StatusOr<std::string> Outcome(const Exchange& x) {
  if (x.grpc_status.empty()) {
    if (x.reset_code != NGHTTP2_NO_ERROR) {
      return absl::UnavailableError(absl::StrCat(
          "stream reset by the server (HTTP/2 error ", x.reset_code, ")"));
    }
    return absl::InternalError(absl::StrCat(
        "answer without grpc-status (HTTP status ", x.http_status, ")"));
  }
  int code = 0;
  for (const char c : x.grpc_status) {
    if (c < '0' || c > '9' || code > 100) {
      return absl::InternalError(
          absl::StrCat("malformed grpc-status \"", x.grpc_status, "\""));
    }
    code = code * 10 + (c - '0');
  }
  if (code > 16) code = static_cast<int>(absl::StatusCode::kUnknown);
  if (code != 0) {
    return absl::Status(static_cast<absl::StatusCode>(code), x.grpc_message);
  }
  absl::StatusOr<std::string_view> message = SingleMessage(x.body);
  if (!message.ok()) return message.status();
  return std::string(*message);
}

}  // namespace

absl::StatusOr<std::string> CallUnary(const std::string& socket_path,
                                      const std::string& method,
                                      std::string_view request,
                                      absl::Duration timeout,
                                      const CancelCheck& cancelled) {
  const absl::Time deadline = common::RealClock::Get().Now() + timeout;
  const int fd = Connect(socket_path);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("connect to ", socket_path, ": ", std::strerror(errno)));
  }
  Exchange x;
  x.out = absl::StrCat(MessagePrefix(request.size()), std::string(request));
  nghttp2_session* session = nullptr;
  nghttp2_session_client_new(&session, ClientCallbacks(), &x);
  nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0);
  const std::string grpc_timeout =
      FormatTimeout(absl::ToChronoNanoseconds(timeout));
  const nghttp2_nv headers[] = {
      Nv(":method", "POST"),
      Nv(":scheme", "http"),
      Nv(":path", method),
      Nv(":authority", "localhost"),
      Nv("content-type", "application/grpc"),
      Nv("te", "trailers"),
      Nv("grpc-timeout", grpc_timeout),
  };
  nghttp2_data_provider provider{};
  provider.source.ptr = &x;
  provider.read_callback = ReadRequest;
  const int32_t stream = nghttp2_submit_request(
      session, nullptr, headers, sizeof(headers) / sizeof(headers[0]),
      &provider, nullptr);
  std::optional<absl::Status> failure;
  if (stream < 0) failure = absl::InternalError("cannot submit the request");
  bool cancel_sent = false;
  while (!failure.has_value() && !x.closed) {
    for (;;) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session, &data);
      if (n <= 0) break;
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = ::send(fd, data + done, static_cast<size_t>(n - done),
                                 MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          failure = absl::UnavailableError(absl::StrCat(
              "write to ", socket_path, ": ", std::strerror(errno)));
          break;
        }
        done += w;
      }
      if (failure.has_value()) break;
    }
    if (failure.has_value() || x.closed) break;
    const absl::Duration left = deadline - common::RealClock::Get().Now();
    if (left <= absl::ZeroDuration()) {
      failure = absl::DeadlineExceededError("deadline exceeded");
      break;
    }
    const absl::Duration wait = cancelled ? std::min(left, kCancelPoll) : left;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, common::PollTimeoutMs(wait));
    if (ready < 0 && errno != EINTR) {
      failure = absl::UnavailableError(std::strerror(errno));
    } else if (ready > 0) {
      char buffer[16384];
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0 || nghttp2_session_mem_recv(
                        session, reinterpret_cast<const uint8_t*>(buffer),
                        static_cast<size_t>(n)) < 0) {
        if (!x.closed) {
          failure = absl::UnavailableError(absl::StrCat(
              "connection to ", socket_path, " closed before the answer"));
        }
      }
    }
    if (!failure.has_value() && !x.closed && !cancel_sent && cancelled &&
        cancelled()) {
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream,
                                NGHTTP2_CANCEL);
      cancel_sent = true;
      failure = absl::CancelledError("cancelled");
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session, &data);
      if (n > 0) ::send(fd, data, static_cast<size_t>(n), MSG_NOSIGNAL);
    }
  }
  nghttp2_session_del(session);
  ::close(fd);
  if (failure.has_value()) return *failure;
  return Outcome(x);
}

}  // namespace gpulet::h2
