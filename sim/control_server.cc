#include "sim/control_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sim/control_protocol.h"
#include "src/base/common/errors.h"
#include "src/base/common/logging.h"

namespace gpulet::sim {
namespace {

using Clock = std::chrono::steady_clock;

absl::StatusOr<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("control socket path \"", path, "\" must be 1..",
                     sizeof(address.sun_path) - 1, " bytes long"));
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// Whether some process accepts connections on the socket file at `address`.
bool SomeoneListens(const sockaddr_un& address) {
  const common::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address),
                   sizeof(address)) == 0 ||
         errno == EAGAIN;  // backlog full: alive but busy
}

absl::Status ClearStaleSocket(const std::string& path,
                              const sockaddr_un& address) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return common::ErrnoToStatus(errno, absl::StrCat("stat ", path));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " exists and is not a socket"));
  }
  if (SomeoneListens(address)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "another NVML simulator is already serving control socket ", path));
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return common::ErrnoToStatus(errno, absl::StrCat("unlink stale ", path));
  }
  return absl::OkStatus();
}

// Reads up to the first newline (or EOF) within the deadline.
absl::StatusOr<std::string> ReadLine(int fd, Clock::time_point deadline) {
  std::string line;
  char buffer[512];
  while (line.find('\n') == std::string::npos) {
    if (line.size() > kMaxControlLineBytes + 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "command line too long (limit ", kMaxControlLineBytes, " bytes)"));
    }
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, RemainingMs(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      return absl::DeadlineExceededError("timed out reading the command");
    }
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return common::ErrnoToStatus(errno, "read control request");
    if (n == 0) break;
    line.append(buffer, static_cast<size_t>(n));
  }
  return line.substr(0, line.find('\n'));
}

void WriteAll(int fd, const std::string& data, Clock::time_point deadline) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n =
        ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, RemainingMs(deadline)) <= 0) return;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ControlServer>> ControlServer::Start(
    const std::string& path, Handler handler) {
  absl::StatusOr<sockaddr_un> address = UnixAddress(path);
  if (!address.ok()) return address.status();
  absl::Status cleared = ClearStaleSocket(path, *address);
  if (!cleared.ok()) return cleared;

  common::UniqueFd listen_fd(
      ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_fd.valid()) {
    return common::ErrnoToStatus(errno, "socket(AF_UNIX)");
  }
  auto fail = [](const std::string& what) {
    return common::ErrnoToStatus(errno, what);
  };
  if (::bind(listen_fd.get(), reinterpret_cast<const sockaddr*>(&*address),
             sizeof(*address)) != 0) {
    return fail(absl::StrCat("bind ", path));
  }
  if (::listen(listen_fd.get(), 16) != 0) {
    return fail(absl::StrCat("listen ", path));
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return fail(absl::StrCat("stat ", path));
  common::UniqueFd wake_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd.valid()) {
    absl::Status status = fail("eventfd");
    ::unlink(path.c_str());
    return status;
  }
  return std::make_unique<ControlServer>(Token{}, path, std::move(handler),
                                         std::move(listen_fd),
                                         std::move(wake_fd), st.st_ino);
}

ControlServer::ControlServer(Token, std::string path, Handler handler,
                             common::UniqueFd listen_fd,
                             common::UniqueFd wake_fd, ino_t inode)
    : path_(std::move(path)),
      handler_(std::move(handler)),
      listen_fd_(std::move(listen_fd)),
      wake_fd_(std::move(wake_fd)),
      inode_(inode),
      thread_([this](std::stop_token stop) { Serve(stop); }) {}

ControlServer::~ControlServer() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
  // Leave the file alone if another server has replaced it meanwhile.
  struct stat st;
  if (::lstat(path_.c_str(), &st) == 0 && st.st_ino == inode_) {
    ::unlink(path_.c_str());
  }
}

void ControlServer::Serve(std::stop_token stop) {
  std::stop_callback wake(stop, [this] {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof(one));
  });
  while (!stop.stop_requested()) {
    pollfd fds[2] = {{listen_fd_.get(), POLLIN, 0},
                     {wake_fd_.get(), POLLIN, 0}};
    int ready = ::poll(fds, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      GPULET_LOG(ERROR) << "NVML simulator: control socket " << path_
                        << ": poll: " << std::strerror(errno)
                        << "; fault injection stopped";
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const common::UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr,
                                        SOCK_CLOEXEC | SOCK_NONBLOCK));
    // The peer gave up already, or EMFILE: try later.
    if (!fd.valid()) continue;
    HandleConnection(fd.get());
  }
}

void ControlServer::HandleConnection(int fd) {
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(kIoTimeoutMs);
  absl::StatusOr<std::string> line = ReadLine(fd, deadline);
  std::string reply;
  if (!line.ok()) {
    reply = FormatErrorReply(line.status().message());
  } else {
    try {
      reply = handler_(*line);
    } catch (const std::exception& e) {
      reply = FormatErrorReply(absl::StrCat("internal error: ", e.what()));
    }
  }
  WriteAll(fd, reply, deadline);
}

}  // namespace gpulet::sim
