// Listening TCP sockets for every HTTP endpoint gpulet serves (the metrics
// server, src/net/http's server): the "host:port" address syntax and the
// socket itself.
//
// The address is "host:port": "127.0.0.1:9400", ":9400" (every IPv4
// interface), "[::1]:9400", "localhost:9400"; port 0 picks a free port,
// which BoundPort() then reports.
//
// Thread safety: free functions without shared state.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::common {

struct ListenAddress {
  std::string host;  // as given, brackets of an IPv6 literal removed; "" = any
  int port = 0;

  bool operator==(const ListenAddress&) const = default;
};

// Splits "host:port". Errors (InvalidArgument, "address \"<value>\": why"):
// no colon, a port that is not a decimal number in [0, 65535], an unclosed
// "[", an IPv6 host without brackets.
absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view address);

// A non-blocking, close-on-exec listening TCP socket on host:port (port 0:
// any free one) with the given backlog; an invalid UniqueFd on failure.
UniqueFd ListenTcp(const std::string& host, int port, int backlog);

// The port a listening socket is bound to; -1 on failure.
int BoundPort(int fd);

}  // namespace gpulet::common
