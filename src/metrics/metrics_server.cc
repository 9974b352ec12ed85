#include "src/metrics/metrics_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/common/logging.h"

namespace gpulet::metrics {
namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";
// A slow or silent client holds the one serving thread at most this long.
constexpr time_t kIoTimeoutSeconds = 2;
constexpr size_t kMaxRequestBytes = 8192;

absl::Status BadAddress(absl::string_view address, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("metrics address \"", address, "\": ", why,
                   " (expected host:port, e.g. \":9400\" or "
                   "\"127.0.0.1:9400\")"));
}

}  // namespace

absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return BadAddress(address, "no port");
  absl::string_view host = address.substr(0, colon);
  absl::string_view port = address.substr(colon + 1);
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 2 || host.back() != ']') {
      return BadAddress(address, "unclosed [ in the host");
    }
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != absl::string_view::npos) {
    return BadAddress(address, "an IPv6 host must be in brackets");
  }
  ListenAddress out;
  out.host = std::string(host);
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) {
    digits = digits && absl::ascii_isdigit(static_cast<unsigned char>(c));
  }
  if (!digits || !absl::SimpleAtoi(port, &out.port) || out.port > 65535) {
    return BadAddress(address, "the port is not a number in [0, 65535]");
  }
  return out;
}

// A deliberately small HTTP/1.1 responder: Prometheus sends one GET per
// scrape, so one thread answers connections one at a time and closes each.
// (Debian's cpp-httplib is a shared library that brings OpenSSL and brotli
// into the process for this one page.)
class MetricsServer::Impl {
 public:
  Impl(const Registry& registry, int listen_fd, int wake_fd)
      : registry_(registry), listen_fd_(listen_fd), wake_fd_(wake_fd) {
    thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
  }

  ~Impl() {
    thread_.request_stop();
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
    ::close(wake_fd_);
  }

 private:
  void Loop(std::stop_token stop) {
    while (!stop.stop_requested()) {
      pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        GPULET_LOG(ERROR) << "metrics server: poll: " << std::strerror(errno);
        return;
      }
      if (fds[1].revents != 0) return;
      int conn = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;
      Serve(conn);
      ::close(conn);
    }
  }

  // Reads the request head (bounded in size and time), answers, returns.
  void Serve(int conn) {
    timeval timeout{kIoTimeoutSeconds, 0};
    ::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    ::setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    std::string head;
    char buf[1024];
    while (head.find("\r\n\r\n") == std::string::npos &&
           head.size() < kMaxRequestBytes) {
      ssize_t n = ::read(conn, buf, sizeof(buf));
      if (n <= 0) break;
      head.append(buf, static_cast<size_t>(n));
    }
    std::vector<absl::string_view> request_line = absl::StrSplit(
        absl::string_view(head).substr(0, head.find("\r\n")), ' ');
    std::string response;
    if (request_line.size() != 3 ||
        !absl::StartsWith(request_line[2], "HTTP/1.")) {
      response = Response("400 Bad Request", "text/plain; charset=utf-8",
                          "bad request\n");
    } else if (request_line[0] != "GET") {
      response = Response("405 Method Not Allowed", "text/plain; charset=utf-8",
                          "only GET\n");
    } else {
      absl::string_view path = request_line[1];
      path = path.substr(0, path.find('?'));
      if (path == "/metrics") {
        response = Response("200 OK", kContentType, registry_.Render());
      } else if (path == "/healthz") {
        response = Response("200 OK", "text/plain; charset=utf-8", "ok\n");
      } else {
        response = Response("404 Not Found", "text/plain; charset=utf-8",
                            "not found\n");
      }
    }
    WriteAll(conn, response);
  }

  static std::string Response(absl::string_view status,
                              absl::string_view type,
                              const std::string& body) {
    return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", type,
                        "\r\nContent-Length: ", body.size(),
                        "\r\nConnection: close\r\n\r\n", body);
  }

  static void WriteAll(int fd, const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::send(fd, data.data() + done, data.size() - done,
                         MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  const Registry& registry_;
  const int listen_fd_;
  const int wake_fd_;
  std::jthread thread_;  // last: started after, joined before the fds close
};

namespace {

// A listening socket on host:port (port 0: any free one); -1 on failure.
int Listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0) {
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 16) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return -1;
  }
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& address, const Registry& registry) {
  absl::StatusOr<ListenAddress> parsed = ParseListenAddress(address);
  if (!parsed.ok()) return parsed.status();
  std::string host = parsed->host.empty() ? "0.0.0.0" : parsed->host;
  const int fd = Listen(host, parsed->port);
  const int port = fd < 0 ? -1 : BoundPort(fd);
  if (port <= 0) {
    if (fd >= 0) ::close(fd);
    return absl::UnavailableError(absl::StrCat(
        "metrics address \"", address,
        "\": cannot listen (address in use, unknown host or no permission)"));
  }
  const int wake = ::eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    ::close(fd);
    return absl::UnavailableError(
        absl::StrCat("metrics server: eventfd: ", std::strerror(errno)));
  }
  auto impl = std::make_unique<Impl>(registry, fd, wake);
  GPULET_LOG(INFO) << "serving metrics on http://"
                   << (host.find(':') != std::string::npos
                           ? absl::StrCat("[", host, "]")
                           : host)
                   << ":" << port << "/metrics";
  return std::make_unique<MetricsServer>(std::move(impl), std::move(host),
                                         port);
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl, std::string host,
                             int port)
    : impl_(std::move(impl)), host_(std::move(host)), port_(port) {}

MetricsServer::~MetricsServer() = default;

}  // namespace gpulet::metrics
