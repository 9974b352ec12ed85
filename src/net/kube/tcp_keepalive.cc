#include "src/net/kube/tcp_keepalive.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "src/base/common/status_macros.h"

namespace gpulet::kube {
namespace {

absl::Status Set(int fd, int level, int option, const char* name, int value) {
  if (::setsockopt(fd, level, option, &value, sizeof(value)) == 0) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("setsockopt ", name, "=", value, ": ", strerror(errno)));
}

}  // namespace

absl::Status ApplyKeepAlive(int fd, const TcpKeepAlive& keepalive) {
  const auto seconds = [](absl::Duration d) {
    return static_cast<int>(absl::ToInt64Seconds(d));
  };
  GPULET_RETURN_IF_ERROR(Set(fd, SOL_SOCKET, SO_KEEPALIVE, "SO_KEEPALIVE", 1));
  GPULET_RETURN_IF_ERROR(Set(fd, IPPROTO_TCP, TCP_KEEPIDLE, "TCP_KEEPIDLE",
                             seconds(keepalive.idle)));
  GPULET_RETURN_IF_ERROR(Set(fd, IPPROTO_TCP, TCP_KEEPINTVL, "TCP_KEEPINTVL",
                             seconds(keepalive.interval)));
  GPULET_RETURN_IF_ERROR(
      Set(fd, IPPROTO_TCP, TCP_KEEPCNT, "TCP_KEEPCNT", keepalive.count));
  return Set(
      fd, IPPROTO_TCP, TCP_USER_TIMEOUT, "TCP_USER_TIMEOUT",
      static_cast<int>(absl::ToInt64Milliseconds(keepalive.user_timeout)));
}

}  // namespace gpulet::kube
