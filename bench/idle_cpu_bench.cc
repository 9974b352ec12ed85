// idle_cpu_bench: CPU time `gpulet plugin` uses while idle, registered with
// a fake kubelet on the simulated islands-16 node (16 GPUs, every one
// watched by the health monitor). After the health monitor has started, it
// reads utime + stime from /proc/<pid>/stat, waits --seconds (default 30),
// reads them again, and reports the difference, per process and per thread
// (/proc/<pid>/task/<tid>/stat, by thread name). A plain program, not a
// Google Benchmark; it accepts and ignores --benchmark_* flags so
// scripts/run-benchmarks runs it like the others. bench/idle-cpu wraps it.
//
//   idle_cpu_bench [--seconds=N] [--machine=PROFILE] [--dir=PATH]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "bench/bench_plugin.h"

namespace gpulet::bench {
namespace {

struct Times {
  std::string name;  // the thread's comm
  long ticks = 0;    // utime + stime
};

// Fields after the command name, which is in parentheses and may hold
// spaces: utime is field 14, stime 15.
bool ReadStat(const std::string& path, Times& out) {
  std::ifstream in(path);
  std::string stat((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  const size_t open = stat.find('(');
  const size_t close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return false;
  out.name = stat.substr(open + 1, close - open - 1);
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  long utime = 0;
  long stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14 && !absl::SimpleAtoi(field, &utime)) return false;
    if (i == 15 && !absl::SimpleAtoi(field, &stime)) return false;
  }
  out.ticks = utime + stime;
  return true;
}

// Ticks per thread id.
std::map<std::string, Times> ThreadTimes(pid_t pid) {
  std::map<std::string, Times> out;
  std::error_code ec;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    Times t;
    const std::string tid = entry.path().filename().string();
    if (ReadStat(entry.path().string() + "/stat", t)) out[tid] = t;
  }
  return out;
}

int Run(int seconds, const std::string& machine, const std::string& dir) {
  const ScratchRoot root = ChooseScratchRoot(dir);
  PluginOptions options;
  options.machine = machine;
  BenchPlugin plugin(root.path, options);
  if (absl::Status s = plugin.Start(); !s.ok()) {
    std::fprintf(stderr, "idle_cpu_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  if (absl::Status s = plugin.WaitForHealthMonitor(); !s.ok()) {
    std::fprintf(stderr, "idle_cpu_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  // Let start-up work (first ListAndWatch, registration) settle.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const pid_t pid = plugin.pid();
  const std::string stat = "/proc/" + std::to_string(pid) + "/stat";
  Times before;
  Times after;
  const std::map<std::string, Times> threads_before = ThreadTimes(pid);
  const auto start = std::chrono::steady_clock::now();
  if (!ReadStat(stat, before)) return 1;
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  if (!ReadStat(stat, after)) return 1;
  const double elapsed_s = std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - start)
                               .count();
  const std::map<std::string, Times> threads_after = ThreadTimes(pid);
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  const long ticks = after.ticks - before.ticks;
  const double cpu_ms = 1000.0 * ticks / hz;
  std::printf("idle CPU of gpulet plugin on %s (%zu threads), %.1f s:\n",
              machine.c_str(), threads_after.size(), elapsed_s);
  std::printf("  utime+stime: %ld ticks (%.0f Hz) = %.1f ms = %.4f%% of one "
              "core\n",
              ticks, hz, cpu_ms, 100.0 * cpu_ms / 1000.0 / elapsed_s);
  std::map<std::string, long> by_name;
  for (const auto& [tid, t] : threads_after) {
    auto it = threads_before.find(tid);
    by_name[t.name] += t.ticks - (it == threads_before.end() ? 0 : it->second.ticks);
  }
  for (const auto& [name, t] : by_name) {
    if (t > 0) std::printf("    thread %-16s %ld ticks\n", name.c_str(), t);
  }
  if (absl::Status s = plugin.Stop(); !s.ok()) {
    std::fprintf(stderr, "idle_cpu_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace gpulet::bench

int main(int argc, char** argv) {
  int seconds = 30;
  std::string machine = "islands-16";
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (absl::StartsWith(arg, "--benchmark_")) continue;
    if (absl::StartsWith(arg, "--seconds=") &&
        absl::SimpleAtoi(arg.substr(10), &seconds) && seconds > 0) {
      continue;
    }
    if (absl::StartsWith(arg, "--machine=")) {
      machine = arg.substr(10);
      continue;
    }
    if (absl::StartsWith(arg, "--dir=")) {
      dir = arg.substr(6);
      continue;
    }
    std::fprintf(stderr,
                 "usage: idle_cpu_bench [--seconds=N] [--machine=PROFILE] "
                 "[--dir=PATH]\n");
    return 2;
  }
  return gpulet::bench::Run(seconds, machine, dir);
}
