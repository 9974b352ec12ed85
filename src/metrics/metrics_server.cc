#include "src/metrics/metrics_server.h"

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "src/common/logging.h"

namespace gpulet::metrics {
namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";
// A scrape is one short request; two threads serve a scraper and a probe.
constexpr size_t kConnectionThreads = 2;
// Bounds how long a kept-alive idle connection delays Stop.
constexpr time_t kKeepAliveSeconds = 1;

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

class MetricsServer::Impl {
 public:
  explicit Impl(const Registry& registry) {
    server_.Get("/metrics",
                [&registry](const httplib::Request&, httplib::Response& res) {
                  res.set_content(registry.Render(), kContentType);
                });
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain; charset=utf-8");
    });
    // cpp-httplib takes ownership of the raw pointer (its API).
    server_.new_task_queue = [] {
      return new httplib::ThreadPool(kConnectionThreads);
    };
    server_.set_keep_alive_timeout(kKeepAliveSeconds);
    // cpp-httplib's default also sets SO_REUSEPORT, which would let a second
    // gpulet share the port silently instead of failing to start.
    server_.set_socket_options([](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
  }

  ~Impl() {
    // stop() is a no-op until the loop runs; Serve() waited for that.
    server_.stop();
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }

  // Returns the bound port, or -1.
  int Bind(const std::string& host, int port) {
    if (port == 0) return server_.bind_to_any_port(host);
    return server_.bind_to_port(host, port) ? port : -1;
  }

  // Starts the listen loop and returns once it runs (or has ended).
  void Serve() {
    thread_ = std::jthread([this](std::stop_token) {
      if (!server_.listen_after_bind()) {
        GPULET_LOG(ERROR) << "metrics server stopped serving unexpectedly";
      }
      done_ = true;
    });
    while (!server_.is_running() && !done_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

 private:
  httplib::Server server_;
  std::atomic<bool> done_{false};
  std::jthread thread_;  // last: joined before the server goes
};

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& address, const Registry& registry) {
  absl::StatusOr<ListenAddress> parsed = ParseListenAddress(address);
  if (!parsed.ok()) return parsed.status();
  std::string host = parsed->host.empty() ? "0.0.0.0" : parsed->host;
  auto impl = std::make_unique<Impl>(registry);
  const int port = impl->Bind(host, parsed->port);
  if (port <= 0) {
    return absl::UnavailableError(absl::StrCat(
        "metrics address \"", address,
        "\": cannot listen (address in use, unknown host or no permission)"));
  }
  impl->Serve();
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
