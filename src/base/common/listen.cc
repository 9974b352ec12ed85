#include "src/base/common/listen.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

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

UniqueFd ListenTcp(const std::string& host, int port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0) {
    return UniqueFd();
  }
  UniqueFd fd;
  for (addrinfo* a = found; a != nullptr && !fd.valid(); a = a->ai_next) {
    // Non-blocking: the serving loops accept until EAGAIN.
    fd = UniqueFd(::socket(a->ai_family,
                           a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                           a->ai_protocol));
    if (!fd.valid()) continue;
    int yes = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 ||
        ::listen(fd.get(), backlog) != 0) {
      fd.Reset();
    }
  }
  ::freeaddrinfo(found);
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
