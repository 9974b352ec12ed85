#include "src/base/metrics/metrics_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/base/common/listen.h"
#include "src/base/common/logging.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::metrics {
namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";
// What one client can hold: a connection slot for at most
// kRequestDeadline, and kMaxRequestBytes of request plus one response.
constexpr auto kRequestDeadline = std::chrono::seconds(5);
constexpr size_t kMaxRequestBytes = 8192;
constexpr size_t kMaxConnections = 16;

}  // namespace

// A deliberately small HTTP/1.1 responder: Prometheus sends one GET per
// scrape. One thread multiplexes up to kMaxConnections connections with
// poll(2); each has kRequestDeadline from its accept to send its request
// head (at most kMaxRequestBytes) and receive the whole answer, then it is
// closed. So a slow or silent client holds one slot for a few seconds and
// never delays the others. (Debian's cpp-httplib is a shared library that
// brings OpenSSL and brotli into the process for this one page.)
class MetricsServer::Impl {
 public:
  Impl(const Registry& registry, common::UniqueFd listen_fd,
       common::UniqueFd wake_fd)
      : registry_(registry),
        listen_fd_(std::move(listen_fd)),
        wake_fd_(std::move(wake_fd)) {
    thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
  }

  ~Impl() {
    thread_.request_stop();
    const uint64_t one = 1;
    (void)!::write(wake_fd_.get(), &one, sizeof(one));
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Conn {
    common::UniqueFd fd;  // invalid once the connection failed
    std::chrono::steady_clock::time_point deadline;
    std::string in;   // request head read so far
    std::string out;  // response not yet sent
    size_t sent = 0;
    bool answered = false;
  };

  void Loop(std::stop_token stop) {
    while (!stop.stop_requested()) {
      std::vector<pollfd> fds;
      fds.push_back({wake_fd_.get(), POLLIN, 0});
      // At the limit the backlog holds new clients until a slot frees.
      fds.push_back(
          {conns_.size() < kMaxConnections ? listen_fd_.get() : -1, POLLIN, 0});
      for (const Conn& c : conns_) {
        fds.push_back(
            {c.fd.get(), static_cast<short>(c.answered ? POLLOUT : POLLIN), 0});
      }
      if (::poll(fds.data(), fds.size(), PollTimeoutMs()) < 0) {
        if (errno == EINTR) continue;
        GPULET_LOG(ERROR) << "metrics server: poll: " << std::strerror(errno);
        return;
      }
      if (fds[0].revents != 0) return;
      for (size_t i = 0; i < conns_.size(); ++i) {
        if (fds[i + 2].revents != 0) Progress(conns_[i]);
      }
      const auto now = std::chrono::steady_clock::now();
      // Erasing a connection closes it.
      std::erase_if(conns_, [now](const Conn& c) {
        return !c.fd.valid() || now >= c.deadline ||
               (c.answered && c.sent == c.out.size());
      });
      if (fds[1].revents != 0) Accept(now);
    }
  }

  int PollTimeoutMs() const {
    if (conns_.empty()) return -1;  // idle: no wake-ups
    auto next = conns_.front().deadline;
    for (const Conn& c : conns_) next = std::min(next, c.deadline);
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(
        next - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<int64_t>(wait.count(), 0));
  }

  void Accept(std::chrono::steady_clock::time_point now) {
    while (conns_.size() < kMaxConnections) {
      common::UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr,
                                    SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (!fd.valid()) return;
      Conn c;
      c.fd = std::move(fd);
      c.deadline = now + kRequestDeadline;
      conns_.push_back(std::move(c));
    }
  }

  // Reads what the client sent, answers once the head is complete (or too
  // long), and writes as much of the answer as the socket takes.
  void Progress(Conn& c) {
    if (!c.answered) {
      char buf[1024];
      while (true) {
        ssize_t n = ::read(c.fd.get(), buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n <= 0) {  // closed or failed before a whole request
          c.fd.Reset();
          return;
        }
        c.in.append(buf, static_cast<size_t>(n));
        if (c.in.find("\r\n\r\n") != std::string::npos ||
            c.in.size() >= kMaxRequestBytes) {
          break;
        }
      }
      if (c.in.find("\r\n\r\n") == std::string::npos &&
          c.in.size() < kMaxRequestBytes) {
        return;
      }
      c.out = Answer(c.in);
      c.in.clear();
      c.answered = true;
    }
    while (c.sent < c.out.size()) {
      ssize_t n = ::send(c.fd.get(), c.out.data() + c.sent,
                         c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        c.fd.Reset();
        return;
      }
      c.sent += static_cast<size_t>(n);
    }
  }

  std::string Answer(const std::string& head) const {
    std::vector<absl::string_view> request_line = absl::StrSplit(
        absl::string_view(head).substr(0, head.find("\r\n")), ' ');
    if (request_line.size() != 3 ||
        !absl::StartsWith(request_line[2], "HTTP/1.")) {
      return Response("400 Bad Request", "text/plain; charset=utf-8",
                      "bad request\n");
    }
    if (request_line[0] != "GET") {
      return Response("405 Method Not Allowed", "text/plain; charset=utf-8",
                      "only GET\n");
    }
    absl::string_view path = request_line[1];
    path = path.substr(0, path.find('?'));
    if (path == "/metrics") {
      return Response("200 OK", kContentType, registry_.Render());
    }
    if (path == "/healthz") {
      return Response("200 OK", "text/plain; charset=utf-8", "ok\n");
    }
    return Response("404 Not Found", "text/plain; charset=utf-8",
                    "not found\n");
  }

  static std::string Response(absl::string_view status, absl::string_view type,
                              const std::string& body) {
    return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", type,
                        "\r\nContent-Length: ", body.size(),
                        "\r\nConnection: close\r\n\r\n", body);
  }

  const Registry& registry_;
  const common::UniqueFd listen_fd_;
  const common::UniqueFd wake_fd_;
  std::vector<Conn> conns_;  // the serving thread's only
  std::jthread thread_;      // last: started after, joined before the fds close
};

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& address, const Registry& registry) {
  absl::StatusOr<common::ListenAddress> parsed =
      common::ParseListenAddress(address);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics ", parsed.status().message()));
  }
  std::string host = parsed->host.empty() ? "0.0.0.0" : parsed->host;
  common::UniqueFd fd = common::ListenTcp(host, parsed->port, /*backlog=*/16);
  const int port = fd.valid() ? common::BoundPort(fd.get()) : -1;
  if (port <= 0) {
    return absl::UnavailableError(absl::StrCat(
        "metrics address \"", address,
        "\": cannot listen (address in use, unknown host or no permission)"));
  }
  common::UniqueFd wake(::eventfd(0, EFD_CLOEXEC));
  if (!wake.valid()) {
    return absl::UnavailableError(
        absl::StrCat("metrics server: eventfd: ", std::strerror(errno)));
  }
  auto impl = std::make_unique<Impl>(registry, std::move(fd), std::move(wake));
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
