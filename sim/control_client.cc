#include "sim/control_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sim/control_protocol.h"
#include "src/base/common/errors.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::sim {
namespace {

using Clock = std::chrono::steady_clock;

// A reply larger than this is not a reply of ours.
constexpr size_t kMaxReplyBytes = 1 << 20;

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

using Fd = common::UniqueFd;

absl::Status Connect(int fd, const std::string& path,
                     Clock::time_point deadline) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  while (::connect(fd, reinterpret_cast<const sockaddr*>(&address),
                   sizeof(address)) != 0) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN && RemainingMs(deadline) > 0) {
      // The server's backlog is full; it drains one request at a time.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (errno == EAGAIN) {
      return absl::DeadlineExceededError(
          absl::StrCat("NVML simulator at ", path, " is too busy to accept"));
    }
    return absl::UnavailableError(
        absl::StrCat("no NVML simulator is listening at ", path, ": ",
                     std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status SendAll(int fd, const std::string& data,
                     Clock::time_point deadline) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n =
        ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) {
      return common::ErrnoToStatus(errno, "send control request");
    }
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, RemainingMs(deadline)) <= 0) {
      return absl::DeadlineExceededError("timed out sending the command");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReceiveAll(int fd, Clock::time_point deadline) {
  std::string reply;
  char buffer[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, RemainingMs(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      return absl::DeadlineExceededError(
          "timed out waiting for the simulator's reply");
    }
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    // A server that refused an oversized request closes with our bytes
    // unread, which resets the connection after its reply.
    if (n < 0 && errno == ECONNRESET && !reply.empty()) return reply;
    if (n < 0) return common::ErrnoToStatus(errno, "read control reply");
    if (n == 0) return reply;
    reply.append(buffer, static_cast<size_t>(n));
    if (reply.size() > kMaxReplyBytes) {
      return absl::InternalError("reply from the simulator is too large");
    }
  }
}

}  // namespace

absl::StatusOr<std::string> SendControlCommand(const std::string& socket_path,
                                               const std::string& line,
                                               int timeout_ms) {
  if (line.find('\n') != std::string::npos) {
    return absl::InvalidArgumentError("a control command is a single line");
  }
  if (socket_path.empty() ||
      socket_path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("control socket path \"", socket_path, "\" must be 1..",
                     sizeof(sockaddr_un::sun_path) - 1, " bytes long"));
  }
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(timeout_ms);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return common::ErrnoToStatus(errno, "socket(AF_UNIX)");
  absl::Status status = Connect(fd.get(), socket_path, deadline);
  if (status.ok()) status = SendAll(fd.get(), line + "\n", deadline);
  if (!status.ok()) return status;
  ::shutdown(fd.get(), SHUT_WR);
  absl::StatusOr<std::string> reply = ReceiveAll(fd.get(), deadline);
  if (!reply.ok()) return reply.status();
  if (reply->empty()) {
    return absl::UnavailableError(absl::StrCat(
        "the NVML simulator at ", socket_path, " closed without replying"));
  }
  return ParseControlReply(*reply);
}

}  // namespace gpulet::sim
