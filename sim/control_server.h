// ControlServer: the simulator's end of the control channel, a unix stream
// socket on which another process (`gpulet sim ...`) injects faults into the
// simulated NVML of a running program. The wire format is in
// control_protocol.h; this class only moves lines: it reads one request line
// per connection, hands it to the handler and writes back what the handler
// returns.
//
// Ownership: the server owns its listening socket, the socket file it
// created, and one std::jthread. The destructor stops the thread (an eventfd
// wakes its poll; there is no polling loop), joins it, and removes the
// socket file if it is still the one this server created.
//
// The server runs inside arbitrary NVML client processes, so it never raises
// SIGPIPE and never blocks on a slow peer for more than kIoTimeoutMs.
//
// Thread safety: the handler is called on the server thread, one request at
// a time; it must be safe to call concurrently with the rest of the program.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::sim {

class ControlServer {
 public:
  using Handler = std::function<std::string(const std::string& line)>;

  // Per-connection read/write deadline.
  static constexpr int kIoTimeoutMs = 1000;

  // Listens on `path`. A stale socket file (one nobody accepts on) is
  // replaced. FailedPrecondition if a live server already accepts on `path`
  // or if `path` exists and is not a socket; InvalidArgument if `path` does
  // not fit a sockaddr_un; other errors name the failing call and the path.
  static absl::StatusOr<std::unique_ptr<ControlServer>> Start(
      const std::string& path, Handler handler);

  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  const std::string& path() const { return path_; }

 private:
  struct Token {};  // keeps the constructor usable by Start() only

 public:
  ControlServer(Token, std::string path, Handler handler,
                common::UniqueFd listen_fd, common::UniqueFd wake_fd,
                ino_t inode);

 private:
  void Serve(std::stop_token stop);
  void HandleConnection(int fd);

  const std::string path_;
  const Handler handler_;
  const common::UniqueFd listen_fd_;
  const common::UniqueFd wake_fd_;
  const ino_t inode_;
  std::jthread thread_;  // declared last: started after, stopped before the fds
};

}  // namespace gpulet::sim
