// EnterContainerRoot and DropPrivileges (src/runtime/wrapper/ldcache_jail.h) in
// a real process, as root: after them no procfs or sysfs is reachable, the
// runtime side's root is gone, and the process can no longer mount or gain
// a capability. Run in a forked child with its own mount namespace (the
// procfs and sysfs it mounts into the test rootfs go with it); nothing is
// written outside the test's directory.
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/runtime/wrapper/ldcache_jail.h"
#include "test/runtime/runc_fixture.h"

namespace gpulet::testing {
namespace {

namespace fs = std::filesystem;

bool IsKernelFs(const char* path) {
  struct statfs st;
  return ::statfs(path, &st) == 0 &&
         (st.f_type == PROC_SUPER_MAGIC || st.f_type == SYSFS_MAGIC);
}

// In the child: what is wrong, one line each; empty when all is well.
std::string ConfineAndLook(const std::string& root) {
  if (::unshare(CLONE_NEWNS) != 0 ||
      ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return "test setup: private mount namespace\n";
  }
  if (::mount("proc", (root + "/proc").c_str(), "proc", 0, nullptr) != 0 ||
      ::mount("sysfs", (root + "/sys").c_str(), "sysfs", 0, nullptr) != 0 ||
      ::mount("proc", (root + "/deep/er/proc").c_str(), "proc", 0, nullptr) !=
          0) {
    return "test setup: mounting procfs and sysfs in the rootfs\n";
  }
  std::string out;
  absl::Status entered = runtime::EnterContainerRoot(root);
  if (!entered.ok())
    return absl::StrCat("EnterContainerRoot: ", entered.ToString(), "\n");
  for (const char* path : {"/", "/proc", "/sys", "/deep/er/proc"}) {
    if (IsKernelFs(path))
      absl::StrAppend(&out, path, " is still procfs/sysfs\n");
  }
  if (::access("/proc/self", F_OK) == 0) out += "/proc/self is reachable\n";
  if (::access("/marker-in-root", F_OK) != 0) out += "/ is not the rootfs\n";
  char cwd[256] = {};
  if (::getcwd(cwd, sizeof(cwd)) == nullptr || std::string(cwd) != "/") {
    out += "working directory is not /\n";
  }
  absl::Status dropped = runtime::DropPrivileges();
  if (!dropped.ok())
    return out + absl::StrCat("DropPrivileges: ", dropped.ToString(), "\n");
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  ::syscall(SYS_capget, &header, data);
  if (data[0].effective != 1u << CAP_DAC_OVERRIDE || data[1].effective != 0 ||
      data[0].permitted != 1u << CAP_DAC_OVERRIDE || data[0].inheritable != 0) {
    out += "capabilities other than CAP_DAC_OVERRIDE remain\n";
  }
  if (::prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 0) {
    out += "CAP_SYS_ADMIN is still in the bounding set\n";
  }
  if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
    out += "no_new_privs unset\n";
  if (::mount("proc", "/proc", "proc", 0, nullptr) == 0) {
    out += "could mount a procfs again\n";
  }
  return out;
}

TEST(LdcacheJailRootTest, NoKernelFsNoRuntimeRootNoCapabilities) {
  std::string why;
  if (!CanRunContainers(&why)) GTEST_SKIP() << why;
  char tmpl[] = "/tmp/gjailXXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string root = std::string(tmpl) + "/rootfs";
  for (const char* dir : {"/proc", "/sys", "/deep/er/proc"}) {
    fs::create_directories(root + dir);
  }
  ::close(::open((root + "/marker-in-root").c_str(), O_CREAT | O_WRONLY, 0644));
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    std::string report = ConfineAndLook(root);
    ssize_t n = ::write(fds[1], report.data(), report.size());
    ::_exit(n == static_cast<ssize_t>(report.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string report;
  char buf[1024];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) > 0) report.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(report, "");
  std::error_code ec;
  fs::remove_all(tmpl, ec);
}

}  // namespace
}  // namespace gpulet::testing
