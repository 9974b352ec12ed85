// Test-only helpers for the tests that load the NVML simulator through
// DynamicLibrary: the simulator's path, a fixture that loads it for a named
// machine, a short temp dir, and a one-line client for the simulator's
// control socket (protocol in sim/control_protocol.h).
//
// Not thread-safe; one test at a time, as gtest runs them.
#pragma once

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "src/gpu/nvml/dynamic_library.h"

namespace gpulet::nvml::simtest {

inline const std::string& SimLibrary() {
  static const std::string* const path =
      new std::string(std::string(GPULET_SIM_LIB_DIR) + "/libnvidia-ml.so.1");
  return *path;
}

inline std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

#define GPULET_ASSERT_OK(expr)                                           \
  do {                                                                   \
    const absl::Status gpulet_status_ = (expr);                          \
    ASSERT_TRUE(gpulet_status_.ok()) << #expr << ": " << gpulet_status_; \
  } while (0)

// Declares `lhs` from a StatusOr, failing the test on error.
#define GPULET_ASSERT_OK_AND_ASSIGN(lhs, expr)                      \
  auto lhs##_or = (expr);                                           \
  ASSERT_TRUE(lhs##_or.ok()) << #expr << ": " << lhs##_or.status(); \
  auto lhs = std::move(*lhs##_or)

// A temp dir with a short path (unix sockets need < 108 bytes), removed by
// the destructor.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gpuletXXXXXX";
    if (::mkdtemp(tmpl) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Creates <path>/<relative> as a symlink to `target`, with parents.
  void Link(const std::string& relative, const std::string& target) const {
    const std::filesystem::path link = std::filesystem::path(path_) / relative;
    std::filesystem::create_directories(link.parent_path());
    std::filesystem::create_symlink(target, link);
  }

 private:
  std::string path_;
};

// Sends one request line to the simulator's control socket and returns the
// reply as written on the wire ("ok\n..." or "error ...\n").
inline absl::StatusOr<std::string> SimControl(const std::string& socket_path,
                                              const std::string& line) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("socket failed");
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return absl::UnavailableError("cannot connect to " + socket_path);
  }
  const std::string request = line + "\n";
  if (::write(fd, request.data(), request.size()) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return absl::InternalError("short write to " + socket_path);
  }
  ::shutdown(fd, SHUT_WR);
  std::string reply;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) reply.append(buffer, n);
  ::close(fd);
  return reply;
}

// Skips (or, when the build includes the simulator, fails) if the simulator
// library is missing.
class SimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(SimLibrary())) {
#ifdef GPULET_SIM_REQUIRED
      FAIL() << "simulator not built: " << SimLibrary();
#else
      GTEST_SKIP() << "simulator not built: " << SimLibrary();
#endif
    }
    ::unsetenv("GPULET_SIM_SOCKET");
  }

  // Loads the simulator for `machine` and initialises it once.
  LibraryPtr OpenSim(const std::string& machine) {
    ::setenv("GPULET_SIM_MACHINE", machine.c_str(), 1);
    LoadOptions options;
    options.library_path = SimLibrary();
    absl::StatusOr<LibraryPtr> library = OpenLibrary(options);
    EXPECT_TRUE(library.ok()) << library.status();
    if (!library.ok()) return nullptr;
    const absl::Status init = (*library)->Init();
    EXPECT_TRUE(init.ok()) << init;
    if (!init.ok()) return nullptr;
    return std::move(*library);
  }
};

}  // namespace gpulet::nvml::simtest
