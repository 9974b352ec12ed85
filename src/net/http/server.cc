#include "src/net/http/server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <list>
#include <optional>
#include <stop_token>
#include <thread>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/listen.h"
#include "src/base/common/logging.h"
#include "src/base/common/unique_fd.h"
#include "src/net/http/client_identity.h"
#include "src/net/http/connection.h"
#include "src/net/http/connection_slots.h"
#include "src/net/http/tls_context.h"

namespace gpulet::http {
namespace {

constexpr size_t kReadChunk = 16 << 10;

Deadline After(absl::Duration d) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             absl::ToChronoNanoseconds(d));
}

void Signal(int event_fd) {
  const uint64_t one = 1;
  (void)!::write(event_fd, &one, sizeof(one));
}

}  // namespace

class Server::Impl {
 public:
  Impl(const ServerOptions& options, Handler handler,
       std::unique_ptr<TlsContext> tls, common::UniqueFd listen_fd,
       common::UniqueFd wake_fd, common::UniqueFd reap_fd)
      : options_(options),
        handler_(std::move(handler)),
        tls_(std::move(tls)),
        client_auth_(!options.client_ca_file.empty()),
        slots_({.max_total = options.max_connections,
                .max_per_peer = options.max_connections_per_peer,
                .evict_untrusted = client_auth_}),
        listen_fd_(std::move(listen_fd)),
        wake_fd_(std::move(wake_fd)),
        reap_fd_(std::move(reap_fd)) {
    thread_ = std::jthread([this](std::stop_token stop) { AcceptLoop(stop); });
  }

  ~Impl() {
    thread_.request_stop();
    Signal(wake_fd_.get());
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Parked {
    common::UniqueFd fd;
    std::string peer;
  };
  struct Worker {
    ConnectionSlots::Id id = 0;
    common::UniqueFd evict_fd;  // written to make the connection give way
    std::atomic<bool> done{false};
    std::jthread thread;  // last: joined before the eventfd closes
  };

  void AcceptLoop(std::stop_token stop) {
    while (!stop.stop_requested()) {
      Reap();
      Unpark();
      const bool room = slots_.CanAdmit();
      // Without room the backlog holds new clients until a connection
      // ends or turns idle (which then signals reap_fd_); so do parked
      // ones.
      waiting_.store(!room || !parked_.empty());
      pollfd fds[3] = {{wake_fd_.get(), POLLIN, 0},
                       {reap_fd_.get(), POLLIN, 0},
                       {room ? listen_fd_.get() : -1, POLLIN, 0}};
      if (::poll(fds, 3, -1) < 0) {
        if (errno == EINTR) continue;
        GPULET_LOG(ERROR) << options_.name
                          << " server: poll: " << std::strerror(errno);
        break;
      }
      if (fds[0].revents != 0) break;
      if (fds[1].revents != 0) {
        uint64_t count = 0;
        (void)!::read(reap_fd_.get(), &count, sizeof(count));
      }
      if (fds[2].revents != 0) Accept();
    }
    // Connection threads see the wake-up eventfd and end; join them all.
    workers_.clear();
    parked_.clear();
  }

  void Accept() {
    while (slots_.CanAdmit()) {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      common::UniqueFd fd(::accept4(listen_fd_.get(),
                                    reinterpret_cast<sockaddr*>(&addr), &len,
                                    SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (!fd.valid()) return;
      Start(std::move(fd), PeerAddress(addr));
    }
  }

  // Serves `fd` on a thread of its own, or parks it while its peer holds
  // its limit of busy connections (or, `parked` already, while there is no
  // room); else closes it.
  void Start(common::UniqueFd fd, std::string peer, bool parked = false) {
    const ConnectionSlots::Admission admission = slots_.Admit(peer);
    if (!admission.admitted) {
      if (!(admission.peer_full || parked) ||
          parked_.size() >= static_cast<size_t>(options_.max_connections)) {
        return;
      }
      parked_.push_back({std::move(fd), std::move(peer)});
      return;
    }
    if (admission.evict.has_value()) Evict(*admission.evict);
    auto worker = std::make_unique<Worker>();
    Worker* w = worker.get();
    w->id = admission.id;
    w->evict_fd = common::UniqueFd(::eventfd(0, EFD_CLOEXEC));
    SslCtxPtr ctx;
    if (tls_ != nullptr) ctx = tls_->Get();
    w->thread = std::jthread(
        [this, w, fd = std::move(fd), ctx = std::move(ctx)]() mutable {
          Serve(Connection(std::move(fd), wake_fd_.get(), w->evict_fd.get(),
                           std::move(ctx)),
                w->id);
          slots_.Release(w->id);
          w->done.store(true);
          Signal(reap_fd_.get());
        });
    workers_.push_back(std::move(worker));
  }

  // Serves the parked connections whose peers have room again, oldest
  // first; the others stay parked.
  void Unpark() {
    std::deque<Parked> parked = std::exchange(parked_, {});
    for (Parked& p : parked) {
      Start(std::move(p.fd), std::move(p.peer), /*parked=*/true);
    }
  }

  void Evict(ConnectionSlots::Id id) {
    for (const std::unique_ptr<Worker>& w : workers_) {
      if (w->id == id) Signal(w->evict_fd.get());
    }
  }

  void Reap() {
    std::erase_if(workers_, [](const std::unique_ptr<Worker>& w) {
      return w->done.load();  // the jthread joins as it is destroyed
    });
  }

  void SetIdle(ConnectionSlots::Id id) {
    slots_.SetState(id, ConnectionSlots::State::kIdle);
    if (waiting_.load()) Signal(reap_fd_.get());  // it may give way now
  }

  // Serves requests on one connection until the client closes it, asks to
  // close it, breaks a bound, is refused, gives way, or the server stops.
  void Serve(Connection&& conn, ConnectionSlots::Id id) {
    if (!conn.Handshake(After(options_.idle_timeout))) return;
    const ClientIdentity client = conn.Client();
    const bool allowed = ClientAllowed(client, options_.allowed_client_names);
    if (client_auth_ && allowed) slots_.SetTrusted(id);
    std::string buf;
    char chunk[kReadChunk];
    while (true) {
      if (buf.empty()) {
        SetIdle(id);
        const long n =
            conn.Read(chunk, sizeof(chunk), After(options_.idle_timeout));
        if (n <= 0) return;
        buf.append(chunk, static_cast<size_t>(n));
      }
      slots_.SetState(id, ConnectionSlots::State::kBusy);
      const Deadline deadline = After(options_.request_deadline);
      std::optional<Head> head = ReadHead(conn, buf, deadline);
      if (!head.has_value()) return;
      if (std::optional<Response> refusal =
              Authorize(head->request, client, allowed)) {
        Refuse(conn, *refusal, deadline);
        return;
      }
      if (!ReadBody(conn, *head, buf, deadline)) return;
      const bool keep = head->keep_alive;
      if (!Reply(conn, Call(head->request), keep, deadline) || !keep) return;
    }
  }

  // The next request head from `buf` and the connection, removed from
  // `buf`; nullopt when the connection is to be closed (answered first
  // when the head is too large or malformed).
  std::optional<Head> ReadHead(Connection& conn, std::string& buf,
                               Deadline deadline) {
    char chunk[kReadChunk];
    size_t end;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (buf.size() > options_.max_head_bytes) break;
      const long n = conn.Read(chunk, sizeof(chunk), deadline);
      if (n <= 0) return std::nullopt;
      buf.append(chunk, static_cast<size_t>(n));
    }
    if (end == std::string::npos || end > options_.max_head_bytes) {
      Refuse(conn, TextResponse(431, "request head too large"), deadline);
      return std::nullopt;
    }
    absl::StatusOr<Head> head = ParseHead(absl::string_view(buf).substr(0, end),
                                          options_.max_body_bytes);
    buf.erase(0, end + 4);
    if (!head.ok()) {
      Refuse(
          conn,
          TextResponse(StatusCodeFor(head.status()), head.status().message()),
          deadline);
      return std::nullopt;
    }
    return *std::move(head);
  }

  // With client certificates: 403 for a path that is not open to a client
  // without an allowed one. The answer names no other client or path.
  std::optional<Response> Authorize(const Request& request,
                                    const ClientIdentity& client,
                                    bool allowed) const {
    if (!client_auth_ || allowed ||
        absl::c_linear_search(options_.open_paths, request.path)) {
      return std::nullopt;
    }
    GPULET_VLOG(1) << options_.name << " server: " << request.method << " "
                   << request.path << " refused: " << client.Describe();
    return TextResponse(403, client.verified
                                 ? "the client certificate's names are not "
                                   "allowed here"
                                 : "a client certificate is required");
  }

  bool ReadBody(Connection& conn, Head& head, std::string& buf,
                Deadline deadline) {
    if (head.expect_continue && buf.size() < head.content_length &&
        !conn.WriteAll("HTTP/1.1 100 Continue\r\n\r\n", deadline)) {
      return false;
    }
    char chunk[kReadChunk];
    while (buf.size() < head.content_length) {
      const long n = conn.Read(chunk, sizeof(chunk), deadline);
      if (n <= 0) return false;
      buf.append(chunk, static_cast<size_t>(n));
    }
    head.request.body = buf.substr(0, head.content_length);
    buf.erase(0, head.content_length);
    return true;
  }

  Response Call(const Request& request) {
    try {
      return handler_(request);
    } catch (const std::exception& e) {
      GPULET_LOG(ERROR) << options_.name << " server: " << request.method << " "
                        << request.path << ": " << e.what();
    } catch (...) {
      GPULET_LOG(ERROR) << options_.name << " server: " << request.method << " "
                        << request.path << ": unknown exception";
    }
    return TextResponse(500, "internal error");
  }

  // Answers and closes without reading the rest of the request.
  void Refuse(Connection& conn, const Response& response, Deadline deadline) {
    if (Reply(conn, response, false, deadline)) conn.Linger(deadline);
  }

  bool Reply(Connection& conn, const Response& response, bool keep_alive,
             Deadline deadline) {
    return conn.WriteAll(FormatResponse(response, keep_alive), deadline);
  }

  const ServerOptions options_;
  const Handler handler_;
  const std::unique_ptr<TlsContext> tls_;
  const bool client_auth_;
  ConnectionSlots slots_;
  const common::UniqueFd listen_fd_;
  // Written once at shutdown, never read: stays ready.
  const common::UniqueFd wake_fd_;
  const common::UniqueFd reap_fd_;  // a connection finished or turned idle
  // Not accepting (no room), or connections parked: a connection turning
  // idle wakes the accept thread.
  std::atomic<bool> waiting_{false};
  std::list<std::unique_ptr<Worker>> workers_;  // the accept thread's only
  std::deque<Parked> parked_;  // the accept thread's only; peers at limit
  std::jthread thread_;  // last: started after, joined before the fds close
};

absl::StatusOr<std::unique_ptr<Server>> Server::Start(
    const ServerOptions& options, Handler handler) {
  absl::StatusOr<common::ListenAddress> address =
      common::ParseListenAddress(options.address);
  if (!address.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.name, " address \"", options.address,
                     "\": expected host:port, e.g. \":12346\" or "
                     "\"127.0.0.1:12346\""));
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert-file and --tls-key-file go together: give both or "
        "neither");
  }
  if (!options.client_ca_file.empty() && options.tls_cert_file.empty()) {
    return absl::InvalidArgumentError(
        "--client-ca-file needs --tls-cert-file and --tls-key-file: client "
        "certificates are checked over TLS only");
  }
  if (options.max_connections < 1 || options.max_connections_per_peer < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.name,
        ": max connections (in all and per peer) must be at least 1"));
  }
  // OpenSSL writes to the socket without MSG_NOSIGNAL: a client that hangs
  // up mid-answer must not kill the process with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<TlsContext> tls;
  if (!options.tls_cert_file.empty()) {
    absl::StatusOr<std::unique_ptr<TlsContext>> loaded =
        TlsContext::Load({.cert_file = options.tls_cert_file,
                          .key_file = options.tls_key_file,
                          .client_ca_file = options.client_ca_file,
                          .require_client_cert = options.open_paths.empty()});
    if (!loaded.ok()) return loaded.status();
    tls = *std::move(loaded);
  }
  absl::StatusOr<common::UniqueFd> fd =
      common::ListenTcp(*address, options.max_connections);
  if (!fd.ok()) {
    return absl::UnavailableError(
        absl::StrCat(options.name, " ", fd.status().message()));
  }
  const int port = common::BoundPort(fd->get());
  common::UniqueFd wake(::eventfd(0, EFD_CLOEXEC));
  common::UniqueFd reap(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid() || !reap.valid()) {
    const std::string error = std::strerror(errno);
    return absl::UnavailableError(
        absl::StrCat(options.name, " server: eventfd: ", error));
  }
  const bool with_tls = tls != nullptr;
  auto impl =
      std::make_unique<Impl>(options, std::move(handler), std::move(tls),
                             *std::move(fd), std::move(wake), std::move(reap));
  GPULET_LOG(INFO) << "serving " << options.name << " on "
                   << (with_tls ? "https" : "http") << "://"
                   << common::FormatListenAddress(
                          {address->host.empty() ? "::" : address->host, port})
                   << (options.client_ca_file.empty()
                           ? ""
                           : " (client certificates checked against " +
                                 options.client_ca_file + ")");
  return std::make_unique<Server>(std::move(impl), port, with_tls);
}

Server::Server(std::unique_ptr<Impl> impl, int port, bool tls)
    : impl_(std::move(impl)), port_(port), tls_(tls) {}

Server::~Server() = default;

}  // namespace gpulet::http
