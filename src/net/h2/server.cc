#include "src/net/h2/server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/unique_fd.h"
#include "src/net/h2/async_call.h"
#include "src/net/h2/server_connection.h"

namespace gpulet::h2 {

namespace {

constexpr size_t kMaxConnections = 64;
constexpr size_t kOutputLimit = 256 * 1024;
constexpr auto kStopGrace = std::chrono::seconds(1);

struct Peer {
  common::UniqueFd fd;
  ServerConnection connection;
  std::string out;
  size_t sent = 0;
  bool writable_wait = false;  // EPOLLOUT registered
  bool broken = false;
  bool closed = false;  // out of epoll; destroyed after the batch

  Peer(common::UniqueFd socket, const Service& service,
       std::shared_ptr<LoopWaker> waker)
      : fd(std::move(socket)), connection(service, std::move(waker)) {}
};

// Writes what the connection has; false when the peer is done with.
bool Flush(int epoll, Peer& peer) {
  for (;;) {
    if (peer.sent == peer.out.size()) {
      peer.out.clear();
      peer.sent = 0;
      if (!peer.connection.Produce(peer.out, kOutputLimit)) peer.broken = true;
      if (peer.out.empty()) break;
    }
    const ssize_t n = ::send(peer.fd.get(), peer.out.data() + peer.sent,
                             peer.out.size() - peer.sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!peer.writable_wait) {
        epoll_event event{};
        event.events = EPOLLIN | EPOLLOUT;
        event.data.ptr = &peer;
        epoll_ctl(epoll, EPOLL_CTL_MOD, peer.fd.get(), &event);
        peer.writable_wait = true;
      }
      return true;
    }
    if (n <= 0) return false;
    peer.sent += static_cast<size_t>(n);
  }
  if (peer.writable_wait) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.ptr = &peer;
    epoll_ctl(epoll, EPOLL_CTL_MOD, peer.fd.get(), &event);
    peer.writable_wait = false;
  }
  if (peer.broken) return false;
  return peer.connection.WantsRead() || peer.connection.WantsWrite();
}

// Reads what the socket has; false when the peer closed or broke the
// connection (what is queued for it still goes out when it can).
bool Drain(Peer& peer) {
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::recv(peer.fd.get(), buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) return false;
    if (!peer.connection.Receive(
            std::string_view(buffer, static_cast<size_t>(n)), Clock::now())) {
      peer.broken = true;
      return true;
    }
    if (static_cast<size_t>(n) < sizeof(buffer)) return true;
  }
}

int TimeoutMs(Clock::time_point next, Clock::time_point now) {
  if (next == Clock::time_point::max()) return -1;
  if (next <= now) return 0;
  const auto ms =
      std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
  return static_cast<int>(std::min<int64_t>(ms, 60'000));
}

}  // namespace

Server::~Server() { Stop(); }

absl::Status Server::Start(const std::string& path, Service service) {
  if (running()) {
    return absl::FailedPreconditionError(
        absl::StrCat("already serving; cannot start on ", path));
  }
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path ", path, " is too long"));
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  common::UniqueFd listener(
      ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener.valid()) {
    return absl::UnavailableError(
        absl::StrCat("socket for ", path, ": ", std::strerror(errno)));
  }
  // Bound 0600 (0777 & ~0177): no moment in which anyone but the owner may
  // connect. umask is per process; no other gpulet thread creates files
  // without setting their mode explicitly.
  const mode_t old_umask = ::umask(0177);
  const int bound =
      ::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int bind_errno = errno;
  ::umask(old_umask);
  if (bound != 0 || ::listen(listener.get(), 64) != 0) {
    const int error = bound != 0 ? bind_errno : errno;
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", path, ": ", std::strerror(error)));
  }
  event_fd_ = common::UniqueFd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!event_fd_.valid()) {
    const int error = errno;
    return absl::UnavailableError(
        absl::StrCat("eventfd for ", path, ": ", std::strerror(error)));
  }
  stopping_ = false;
  service_ = std::move(service);
  waker_ = std::make_shared<LoopWaker>(event_fd_.get());
  thread_ = std::jthread(
      [this, fd = std::move(listener)]() mutable { Loop(std::move(fd)); });
  return absl::OkStatus();
}

void Server::Signal() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n =
      ::write(event_fd_.get(), &one, sizeof(one));
}

void Server::WakeStreams() {
  wake_ = true;
  Signal();
}

void Server::Stop() {
  if (!running()) return;
  stopping_ = true;
  Signal();
  thread_.join();
  thread_ = std::jthread();
  // Completions still to come find the waker closed, not a reused fd.
  waker_->Close();
  waker_.reset();
  event_fd_.Reset();
}

void Server::Loop(common::UniqueFd listener_fd) {
  const common::UniqueFd epoll_fd(epoll_create1(EPOLL_CLOEXEC));
  const int epoll = epoll_fd.get();
  const int listener = listener_fd.get();
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = nullptr;  // the listener
  epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event);
  event.data.ptr = &event_fd_;
  epoll_ctl(epoll, EPOLL_CTL_ADD, event_fd_.get(), &event);
  absl::flat_hash_map<Peer*, std::unique_ptr<Peer>> peers;
  // A batch of events may still name a peer closed earlier in it, so the
  // peer lives until the batch is done.
  std::vector<Peer*> closed;
  const auto close_peer = [&](Peer* peer) {
    if (peer->closed) return;
    peer->closed = true;
    epoll_ctl(epoll, EPOLL_CTL_DEL, peer->fd.get(), nullptr);
    closed.push_back(peer);
  };
  Clock::time_point next = Clock::time_point::max();
  std::optional<Clock::time_point> stop_by;
  for (;;) {
    const Clock::time_point now = Clock::now();
    if (stop_by.has_value()) {
      if (peers.empty() || now >= *stop_by) break;
      next = std::min(next, *stop_by);
    }
    epoll_event ready[32];
    const int n = epoll_wait(epoll, ready, 32, TimeoutMs(next, Clock::now()));
    for (int i = 0; i < n; ++i) {
      void* tag = ready[i].data.ptr;
      if (tag == nullptr) {
        for (;;) {
          common::UniqueFd fd(::accept4(listener, nullptr, nullptr,
                                        SOCK_NONBLOCK | SOCK_CLOEXEC));
          if (!fd.valid()) break;
          // Past the limit, or stopping: closed at once.
          if (peers.size() >= kMaxConnections || stop_by.has_value()) continue;
          auto peer = std::make_unique<Peer>(std::move(fd), service_, waker_);
          event.events = EPOLLIN;
          event.data.ptr = peer.get();
          epoll_ctl(epoll, EPOLL_CTL_ADD, peer->fd.get(), &event);
          Peer* raw = peer.get();
          peers.emplace(raw, std::move(peer));
          if (!Flush(epoll, *raw)) close_peer(raw);
        }
      } else if (tag == &event_fd_) {
        uint64_t count = 0;
        [[maybe_unused]] const ssize_t r =
            ::read(event_fd_.get(), &count, sizeof(count));
        if (stopping_ && !stop_by.has_value()) {
          stop_by = Clock::now() + kStopGrace;
          epoll_ctl(epoll, EPOLL_CTL_DEL, listener, nullptr);
          for (auto& [raw, peer] : peers) peer->connection.Shutdown();
        }
        if (wake_.exchange(false)) {
          for (auto& [raw, peer] : peers) peer->connection.WakeStreams();
        }
        if (waker_->TakeReady()) {
          for (auto& [raw, peer] : peers) peer->connection.CollectAsync();
        }
        for (auto& [raw, peer] : peers) {
          if (!peer->closed && !Flush(epoll, *peer)) close_peer(raw);
        }
      } else {
        auto* peer = static_cast<Peer*>(tag);
        if (peer->closed) continue;
        const bool open = (ready[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                              ? Drain(*peer)
                              : true;
        if (!Flush(epoll, *peer) || !open) close_peer(peer);
      }
    }
    // Deadlines: only while a call has one does the loop wake on a timer.
    const Clock::time_point after = Clock::now();
    const bool due = next <= after;
    next = Clock::time_point::max();
    for (auto& [raw, peer] : peers) {
      if (peer->closed) continue;
      next = std::min(next, peer->connection.Expire(after));
      if (due && !Flush(epoll, *peer)) close_peer(raw);
    }
    for (Peer* peer : closed) peers.erase(peer);
    closed.clear();
  }
  peers.clear();
}

}  // namespace gpulet::h2
