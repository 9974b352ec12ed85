#include "test/integration/daemon_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/time/clock.h"
#include "test/integration/gpulet_runner.h"

extern char** environ;

namespace gpulet::testing {
namespace {

constexpr char kNoSysfs[] = "/nonexistent/gpulet-test-sysfs";

bool Inherited(const std::string& entry) {
  for (const char* name :
       {"GPULET_SIM_SOCKET=", "GPULET_NVML_LIB=", "NVIDIA_DRIVER_ROOT=",
        "GPULET_SIM_MACHINE=", "KUBELET_SOCKET=", "FAIL_ON_INIT_ERROR=",
        "DP_DISABLE_HEALTHCHECKS=", "DP_ENABLE_HEALTHCHECKS=", "NODE_NAME=",
        "KUBECONFIG=", "GPULET_POD_RESOURCES_SOCKET="}) {
    if (entry.rfind(name, 0) == 0) return false;
  }
  return true;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> ptrs;
  for (auto& s : strings) ptrs.push_back(s.data());
  ptrs.push_back(nullptr);
  return ptrs;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

DaemonProcess::DaemonProcess(const std::string& machine,
                             const std::vector<std::string>& args,
                             const std::string& log_path,
                             const std::vector<std::string>& env,
                             const std::string& command)
    : log_path_(log_path) {
  std::vector<std::string> argv = {GpuletBinary(), "--nvml-lib", SimLibPath(),
                                   "--sysfs-root", kNoSysfs,     command};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) {
    if (Inherited(*e)) envs.emplace_back(*e);
  }
  envs.push_back("GPULET_SIM_MACHINE=" + machine);
  envs.insert(envs.end(), env.begin(), env.end());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> arg_ptrs = Pointers(argv);
  std::vector<char*> env_ptrs = Pointers(envs);
  if (posix_spawn(&pid_, argv[0].c_str(), &actions, nullptr, arg_ptrs.data(),
                  env_ptrs.data()) != 0) {
    pid_ = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0 && !exit_code_.has_value()) {
    ::kill(pid_, SIGKILL);
    WaitExit(absl::Seconds(10));
  }
}

void DaemonProcess::Signal(int signo) const {
  if (pid_ > 0) ::kill(pid_, signo);
}

std::optional<int> DaemonProcess::WaitExit(absl::Duration timeout) {
  if (exit_code_.has_value() || pid_ <= 0) return exit_code_;
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return exit_code_;
    }
    if (absl::Now() > deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(10));
  }
}

bool DaemonProcess::Running() {
  return pid_ > 0 && !WaitExit(absl::ZeroDuration()).has_value();
}

std::string DaemonProcess::Log() const { return ReadAll(log_path_); }

bool DaemonProcess::WaitForLog(const std::string& text,
                               absl::Duration timeout) const {
  absl::Time deadline = absl::Now() + timeout;
  while (Log().find(text) == std::string::npos) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

int DaemonProcess::OpenFds() const {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator(
           "/proc/" + std::to_string(pid_) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

int DaemonProcess::Threads() const {
  std::istringstream status(
      ReadAll("/proc/" + std::to_string(pid_) + "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

long DaemonProcess::CpuTicks() const {
  std::string stat = ReadAll("/proc/" + std::to_string(pid_) + "/stat");
  // Fields after the command name, which is in parentheses and may hold
  // spaces: state is field 3, utime 14, stime 15.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  long utime = 0;
  long stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

}  // namespace gpulet::testing
