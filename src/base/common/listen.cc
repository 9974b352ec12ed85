#include "src/base/common/listen.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpulet::common {
namespace {

absl::Status BadAddress(absl::string_view address, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("address \"", address, "\": ", why,
                   " (expected host:port, e.g. \":9400\" or "
                   "\"127.0.0.1:9400\")"));
}

absl::Status CannotListen(const ListenAddress& address, int error) {
  return absl::UnavailableError(
      absl::StrCat("address \"", FormatListenAddress(address),
                   "\": cannot listen: ", std::strerror(error)));
}

// A listening socket on `addr`, or an invalid one with the failing call's
// errno in `error`. An IPv6 wildcard takes IPv4 peers too (IPV6_V6ONLY off,
// whatever net.ipv6.bindv6only says); an IPv6 literal takes IPv6 only.
UniqueFd TryListen(const sockaddr* addr, socklen_t len, int backlog,
                   int* error) {
  // Non-blocking: the serving loops accept until EAGAIN.
  UniqueFd fd(
      ::socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) {
    *error = errno;
    return fd;
  }
  int yes = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    const int v6only = IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr) ? 0 : 1;
    if (::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only,
                     sizeof(v6only)) != 0) {
      *error = errno;
      return UniqueFd();
    }
  }
  if (::bind(fd.get(), addr, len) != 0 || ::listen(fd.get(), backlog) != 0) {
    *error = errno;
    return UniqueFd();
  }
  return fd;
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

std::string FormatListenAddress(const ListenAddress& address) {
  if (address.host.find(':') != std::string::npos) {
    return absl::StrCat("[", address.host, "]:", address.port);
  }
  return absl::StrCat(address.host, ":", address.port);
}

absl::StatusOr<UniqueFd> ListenTcp(const ListenAddress& address, int backlog) {
  int error = 0;
  if (address.host.empty()) {
    sockaddr_in6 any6{};
    any6.sin6_family = AF_INET6;
    any6.sin6_addr = in6addr_any;
    any6.sin6_port = htons(static_cast<uint16_t>(address.port));
    UniqueFd fd = TryListen(reinterpret_cast<const sockaddr*>(&any6),
                            sizeof(any6), backlog, &error);
    if (fd.valid()) return fd;
    // Only a kernel without IPv6 falls back; a port in use stays an error.
    if (error == EAFNOSUPPORT) {
      sockaddr_in any4{};
      any4.sin_family = AF_INET;
      any4.sin_addr.s_addr = htonl(INADDR_ANY);
      any4.sin_port = htons(static_cast<uint16_t>(address.port));
      fd = TryListen(reinterpret_cast<const sockaddr*>(&any4), sizeof(any4),
                     backlog, &error);
      if (fd.valid()) return fd;
    }
    return CannotListen(address, error);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(address.port);
  if (const int gai =
          ::getaddrinfo(address.host.c_str(), service.c_str(), &hints, &found);
      gai != 0) {
    return absl::UnavailableError(
        absl::StrCat("address \"", FormatListenAddress(address),
                     "\": cannot resolve the host: ", ::gai_strerror(gai)));
  }
  UniqueFd fd;
  for (addrinfo* a = found; a != nullptr && !fd.valid(); a = a->ai_next) {
    fd = TryListen(a->ai_addr, a->ai_addrlen, backlog, &error);
  }
  ::freeaddrinfo(found);
  if (!fd.valid()) return CannotListen(address, error);
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

}  // namespace gpulet::common
