// Listening TCP sockets for every HTTP endpoint gpulet serves (src/net/http's
// server: the scheduler extender, /metrics): the "host:port" address syntax
// and the socket itself.
//
// The address is "host:port": ":9400" (every interface, IPv4 and IPv6),
// "127.0.0.1:9400", "0.0.0.0:9400" (every IPv4 interface), "[::1]:9400",
// "localhost:9400"; port 0 picks a free port, which BoundPort() then
// reports. An empty host (or "[::]") binds one IPv6 socket that takes IPv4
// peers too (IPV6_V6ONLY off, whatever the sysctl net.ipv6.bindv6only
// says; IPv4 peers appear as ::ffff:a.b.c.d); on a kernel without IPv6
// (socket() fails with EAFNOSUPPORT) an empty host binds 0.0.0.0 instead.
// Another IPv6 literal binds IPv6 only.
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

// "host:port" again, an IPv6 literal in brackets (":9400" for any host).
std::string FormatListenAddress(const ListenAddress& address);

// A non-blocking, close-on-exec listening TCP socket on the address (port
// 0: any free one) with the given backlog. Errors (Unavailable) name the
// address and say why: the host does not resolve, or the bind or listen
// failed (address in use, no permission) with the system's reason.
absl::StatusOr<UniqueFd> ListenTcp(const ListenAddress& address, int backlog);

// The port a listening socket is bound to; -1 on failure.
int BoundPort(int fd);

}  // namespace gpulet::common
