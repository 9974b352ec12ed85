#include "src/gpu/health/uevent.h"

#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "src/base/common/errors.h"

namespace gpulet::health {
namespace {

// The kernel's uevent buffer is 2048 bytes; udev reads with 8 KiB.
constexpr size_t kMaxDatagram = 8192;
// Room for a burst (a group of four functions bound, each bind and driver
// event) without ENOBUFS.
constexpr int kReceiveBuffer = 256 * 1024;

// The uid map of this process: "0 0 4294967295" outside any user namespace.
bool InInitialUserNamespace() {
  std::ifstream in("/proc/self/uid_map");
  if (!in) return true;  // no /proc: assume the host's
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> fields =
      absl::StrSplit(text.str(), absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
  return fields.size() == 3 && fields[0] == "0" && fields[1] == "0" &&
         fields[2] == "4294967295";
}

}  // namespace

std::optional<Uevent> ParseUevent(absl::string_view datagram) {
  if (absl::StartsWith(datagram, "libudev")) return std::nullopt;
  Uevent event;
  bool header = true;
  for (absl::string_view field : absl::StrSplit(datagram, '\0')) {
    if (header) {  // "<action>@<devpath>"
      header = false;
      if (field.find('@') == absl::string_view::npos) return std::nullopt;
      continue;
    }
    const size_t eq = field.find('=');
    if (eq == absl::string_view::npos) continue;
    const absl::string_view key = field.substr(0, eq);
    const std::string value(field.substr(eq + 1));
    if (key == "ACTION") event.action = value;
    if (key == "DEVPATH") event.devpath = value;
    if (key == "SUBSYSTEM") event.subsystem = value;
    if (key == "DRIVER") event.driver = value;
  }
  if (event.action.empty() || event.devpath.empty()) return std::nullopt;
  return event;
}

bool AffectsPassthrough(const Uevent& event) {
  const std::string& a = event.action;
  if (event.subsystem == "pci") {
    return a == "bind" || a == "unbind" || a == "add" || a == "remove";
  }
  return event.subsystem == "mdev" && (a == "add" || a == "remove");
}

absl::StatusOr<common::UniqueFd> OpenKernelUevents() {
  if (!InInitialUserNamespace()) {
    return absl::FailedPreconditionError(
        "kernel uevents: this process runs in a user namespace, whose "
        "network namespaces receive no kernel uevents");
  }
  common::UniqueFd fd(::socket(AF_NETLINK,
                               SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                               NETLINK_KOBJECT_UEVENT));
  if (!fd.valid()) {
    return common::ErrnoToStatus(errno, "socket(NETLINK_KOBJECT_UEVENT)");
  }
  const int size = kReceiveBuffer;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  sockaddr_nl address{};
  address.nl_family = AF_NETLINK;
  address.nl_groups = 1;  // the kernel's own messages
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address),
             sizeof(address)) != 0) {
    return common::ErrnoToStatus(errno,
                                 "bind NETLINK_KOBJECT_UEVENT to group 1");
  }
  return fd;
}

absl::StatusOr<common::UniqueFd> OpenUeventRelay(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("uevent socket \"", path, "\": empty or longer than ",
                     sizeof(address.sun_path) - 1, " bytes"));
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  common::UniqueFd fd(
      ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return common::ErrnoToStatus(errno, "socket(AF_UNIX)");
  // A previous run's socket goes; anything else at the path stays and the
  // bind below fails naming it.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    ::unlink(path.c_str());
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address),
             sizeof(address)) != 0) {
    return common::ErrnoToStatus(errno, "bind uevent socket " + path);
  }
  return fd;
}

bool DrainUevents(int fd) {
  std::array<char, kMaxDatagram> buffer;
  bool affected = false;
  for (;;) {
    const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return affected || errno == ENOBUFS;
    }
    if (n == 0) continue;  // an empty datagram
    std::optional<Uevent> event =
        ParseUevent(absl::string_view(buffer.data(), static_cast<size_t>(n)));
    affected = affected || (event.has_value() && AffectsPassthrough(*event));
  }
}

}  // namespace gpulet::health
