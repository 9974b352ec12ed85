// unix_echo_server: the kernel's floor for plugin_peers_bench. It accepts
// one connection at a time on a unix socket; the client first sends two
// little-endian 32-bit sizes (request, response), then per exchange writes
// `request` bytes, which the server reads in full before writing `response`
// bytes back. One thread, blocking calls: what is left is the syscalls and
// the wake-ups of both ends.
//
//   unix_echo_server <socket-path>
// Prints "ready" once listening; runs until killed.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool ReadFull(int fd, void* buffer, size_t size) {
  char* p = static_cast<char*>(buffer);
  while (size > 0) {
    const ssize_t n = ::read(fd, p, size);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool WriteFull(int fd, const void* buffer, size_t size) {
  const char* p = static_cast<const char*>(buffer);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Sizes above this are a broken client, not a plugin exchange.
constexpr uint32_t kMaxSize = 1 << 20;

void Serve(int fd) {
  uint32_t sizes[2];
  if (!ReadFull(fd, sizes, sizeof(sizes)) || sizes[0] > kMaxSize ||
      sizes[1] > kMaxSize) {
    return;
  }
  std::vector<char> request(sizes[0]);
  const std::vector<char> response(sizes[1], 'r');
  while (ReadFull(fd, request.data(), request.size()) &&
         WriteFull(fd, response.data(), response.size())) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  sockaddr_un addr{};
  if (argc != 2 || std::strlen(argv[1]) >= sizeof(addr.sun_path)) {
    std::fputs("usage: unix_echo_server <socket-path> (< 108 bytes)\n", stderr);
    return 2;
  }
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, argv[1]);
  ::unlink(argv[1]);
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0 ||
      ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 4) != 0) {
    std::perror("unix_echo_server");
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Serve(fd);
    ::close(fd);
  }
}
