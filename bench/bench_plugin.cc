#include "bench/bench_plugin.h"

#include <linux/magic.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bench/bench_stats.h"
#include "grpcpp/grpcpp.h"

namespace gpulet::bench {
namespace {

// Only reached when something is broken.
constexpr absl::Duration kTimeout = absl::Seconds(20);

bool IsTmpfs(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 &&
         static_cast<unsigned long>(fs.f_type) == TMPFS_MAGIC;
}

std::string LastLines(const std::string& text, size_t max_bytes) {
  return text.size() <= max_bytes
             ? text
             : "..." + text.substr(text.size() - max_bytes);
}

// Fills each field from the line "<name> <value> kB" of a /proc file.
void ReadKib(const std::string& path,
             const std::vector<std::pair<std::string, long*>>& fields) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    for (const auto& [name, value] : fields) {
      if (line.rfind(name, 0) == 0) {
        *value = std::stol(line.substr(name.size()));
      }
    }
  }
}

}  // namespace

ScratchRoot ChooseScratchRoot(const std::string& requested) {
  std::string path = requested;
  if (path.empty()) path = IsTmpfs("/dev/shm") ? "/dev/shm" : "/tmp";
  return {path, path + (IsTmpfs(path) ? " (tmpfs)" : " (not tmpfs)")};
}

BenchPlugin::BenchPlugin(std::string root, PluginOptions options)
    : root_(std::move(root)), options_(std::move(options)) {}

BenchPlugin::~BenchPlugin() {
  process_.reset();  // SIGKILLs and reaps the child if it still runs
  kubelet_.reset();
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

absl::Status BenchPlugin::Start() {
  std::string templ = root_ + "/gpb-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp in ", root_, " failed"));
  }
  dir_ = templ;
  plugins_dir_ = dir_ + "/plugins";
  std::error_code ec;
  if (!std::filesystem::create_directory(plugins_dir_, ec)) {
    return absl::InternalError(
        absl::StrCat("mkdir ", plugins_dir_, ": ", ec.message()));
  }
  kubelet_ = std::make_unique<testing::FakeKubelet>(plugins_dir_);
  if (!kubelet_->Start()) {
    return absl::InternalError("fake kubelet did not start in " + plugins_dir_);
  }
  std::vector<std::string> env;
  if (options_.sim_control) {
    env.push_back("GPULET_SIM_SOCKET=" + sim_socket_path());
  }
  std::vector<std::string> args = {"--kubelet-socket", kubelet_->socket_path()};
  if (!options_.config_file.empty()) {
    args.insert(args.end(), {"--config-file", options_.config_file});
  }
  const BenchClock::time_point spawn = BenchClock::now();
  process_ = std::make_unique<testing::DaemonProcess>(
      options_.machine, args, dir_ + "/gpulet.log", env);
  if (!process_->started()) return Failure("spawning gpulet failed");
  if (!kubelet_->WaitForRegistrations(1, kTimeout)) {
    return Failure("no registration within 20s");
  }
  start_to_registered_us_ = MicrosSince(spawn);
  return absl::OkStatus();
}

absl::Status BenchPlugin::WaitForHealthMonitor() const {
  if (!process_->WaitForLog("health monitor: watching", kTimeout)) {
    return Failure("the health monitor did not start");
  }
  return absl::OkStatus();
}

absl::Status BenchPlugin::Stop() {
  process_->Signal(SIGTERM);
  std::optional<int> code = process_->WaitExit(kTimeout);
  if (code != 0) return Failure("gpulet did not exit 0 on SIGTERM");
  return absl::OkStatus();
}

pid_t BenchPlugin::pid() const { return process_ ? process_->pid() : -1; }

std::unique_ptr<v1beta1::DevicePlugin::Stub> BenchPlugin::Dial() const {
  return v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
      "unix:" + socket_path(), grpc::InsecureChannelCredentials()));
}

absl::Status BenchPlugin::Failure(const std::string& what) const {
  std::string log = process_ ? process_->Log() : std::string();
  return absl::InternalError(
      absl::StrCat("gpulet plugin (", options_.machine, ", ", dir_, "): ", what,
                   "\n--- plugin log (tail)\n", LastLines(log, 4000)));
}

MemoryKib ReadMemory(pid_t pid) {
  MemoryKib m;
  const std::string proc = "/proc/" + std::to_string(pid);
  ReadKib(proc + "/status", {{"VmRSS:", &m.rss},
                             {"VmHWM:", &m.hwm},
                             {"RssAnon:", &m.rss_anon},
                             {"RssFile:", &m.rss_file}});
  ReadKib(proc + "/smaps_rollup", {{"Pss:", &m.pss}});
  return m;
}

double CpuMicros(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  // Fields after the command name, which may hold spaces: state is field 3,
  // utime and stime are fields 14 and 15.
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  double ticks = 0;
  for (int n = 3; n <= 15 && fields >> field; ++n) {
    if (n >= 14) ticks += std::stod(field);
  }
  return ticks * 1e6 / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

ThreadCpu ReadThreadCpu(pid_t pid) {
  ThreadCpu threads;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(
           "/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path().string() + "/schedstat");
    double run_ns = 0;
    if (in >> run_ns) threads[task.path().filename().string()] = run_ns;
  }
  return threads;
}

double CpuMicrosBetween(const ThreadCpu& before, const ThreadCpu& after) {
  double ns = 0;
  for (const auto& [tid, run_ns] : after) {
    auto it = before.find(tid);
    ns += run_ns - (it == before.end() ? 0 : it->second);
  }
  return ns / 1000;
}

}  // namespace gpulet::bench
