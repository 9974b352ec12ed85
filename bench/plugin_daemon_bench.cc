// plugin_daemon_bench: end-to-end figures of `gpulet plugin` on the simulated
// dgx-h100 node, measured from this separate process over the plugin's unix
// socket: start to registered, resident memory, Allocate and
// GetPreferredAllocation round trips, and ListAndWatch health-update latency.
// A plain program, not a Google Benchmark: the figures are percentiles over
// processes and events. It accepts and ignores --benchmark_* flags so
// scripts/run-benchmarks can run every *_bench the same way.
//
//   plugin_daemon_bench [--starts=N] [--samples=N] [--events=N] [--dir=PATH]
//                       [--raw=FILE] [--machine=PROFILE] [--config=FILE]
// --raw writes every sample as CSV lines "figure,index,microseconds".
// --machine picks the simulator profile (default dgx-h100); --config passes
// a `version: v1` file to every plugin, e.g. time-slicing replicas (with
// islands-16 and bench/configs/time-slicing-48.yaml: 768 devices).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "bench/bench_plugin.h"
#include "bench/bench_stats.h"
#include "bench/daemon_phases.h"
#include "test/integration/gpulet_runner.h"

namespace gpulet::bench {
namespace {

constexpr char kUsage[] =
    "usage: plugin_daemon_bench [--starts=N] [--samples=N] [--events=N] "
    "[--dir=PATH] [--raw=FILE] [--machine=PROFILE] [--config=FILE]\n";

struct Flag {
  const char* name;
  int* value;
};

struct Paths {
  std::string dir;  // --dir: scratch root
  std::string raw;  // --raw: CSV of every sample
};

bool ParseArgs(int argc, char** argv, PhaseConfig& config, Paths& paths) {
  const Flag ints[] = {{"--starts=", &config.starts},
                       {"--samples=", &config.samples},
                       {"--events=", &config.health_events}};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (absl::StartsWith(arg, "--benchmark_")) continue;
    if (absl::StartsWith(arg, "--dir=")) {
      paths.dir = arg.substr(6);
      continue;
    }
    if (absl::StartsWith(arg, "--raw=")) {
      paths.raw = arg.substr(6);
      continue;
    }
    if (absl::StartsWith(arg, "--machine=")) {
      config.machine = arg.substr(10);
      continue;
    }
    if (absl::StartsWith(arg, "--config=")) {
      config.config_file = arg.substr(9);
      if (!std::ifstream(config.config_file)) {
        std::fprintf(stderr, "%s: cannot read the file\n", arg.c_str());
        return false;
      }
      continue;
    }
    const Flag* flag = nullptr;
    for (const Flag& f : ints) {
      if (absl::StartsWith(arg, f.name)) flag = &f;
    }
    if (flag == nullptr) {
      std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return false;
    }
    if (!absl::SimpleAtoi(arg.substr(std::string(flag->name).size()),
                          flag->value) ||
        *flag->value <= 0) {
      std::fprintf(stderr, "%s: expected a positive number\n", arg.c_str());
      return false;
    }
  }
  return true;
}

std::string FirstLine(const std::string& path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (prefix.empty() || absl::StartsWith(line, prefix)) return line;
  }
  return "?";
}

void PrintMachine(const ScratchRoot& root, const PhaseConfig& config) {
  std::string cpu = FirstLine("/proc/cpuinfo", "model name");
  if (size_t colon = cpu.find(": "); colon != std::string::npos) {
    cpu = cpu.substr(colon + 2);
  }
  std::printf("machine:  %ld CPUs (%s), load average %s\n",
              ::sysconf(_SC_NPROCESSORS_ONLN), cpu.c_str(),
              FirstLine("/proc/loadavg", "").c_str());
  std::printf("gpulet:   %s (%s build)\n", testing::GpuletBinary().c_str(),
              GPULET_BENCH_BUILD_TYPE);
  std::printf("node:     NVML simulator, machine %s\n", config.machine.c_str());
  if (!config.config_file.empty()) {
    std::printf("config:   --config-file %s\n", config.config_file.c_str());
  }
  std::printf("sockets:  %s\n\n",
              root.path.empty() ? "?" : root.description.c_str());
}

void PrintHeader(const char* unit) {
  std::printf("%-34s %6s %10s %10s %10s %10s  %s\n", unit, "n", "p50", "p99",
              "min", "max", "target");
}

void PrintRow(const std::string& name, const std::vector<double>& samples,
              double scale, const std::string& target) {
  Summary s = Summarize(samples);
  std::printf("%-34s %6zu %10.1f %10.1f %10.1f %10.1f  %s\n", name.c_str(), s.n,
              s.p50 * scale, s.p99 * scale, s.min * scale, s.max * scale,
              target.c_str());
}

std::string Verdict(double value, double limit, const char* text) {
  return std::string(text) + (value < limit ? " (met)" : " (MISSED)");
}

double MiB(long kib) { return static_cast<double>(kib) / 1024.0; }

void PrintMemory(const char* when, const MemoryKib& m) {
  std::printf("%-34s %7.2f %7.2f %8.2f %8.2f %7.2f  %s\n", when, MiB(m.rss),
              MiB(m.hwm), MiB(m.rss_anon), MiB(m.rss_file), MiB(m.pss),
              Verdict(MiB(m.rss), 15, "VmRSS < 15 MiB").c_str());
}

// Every sample as "figure,index,microseconds".
absl::Status WriteRaw(const std::string& path,
                      const std::vector<double>& starts, const RpcResults& rpcs,
                      const HealthResults& health) {
  std::vector<std::pair<std::string, const std::vector<double>*>> figures = {
      {"start to registered", &starts}};
  for (const auto& [name, us] : rpcs.cases) figures.emplace_back(name, &us);
  figures.emplace_back("ListAndWatch update after Xid", &health.update_us);
  figures.emplace_back("control-socket command", &health.control_us);
  std::ofstream out(path);
  for (const auto& [name, samples] : figures) {
    for (size_t i = 0; i < samples->size(); ++i) {
      out << name << ',' << i << ',' << (*samples)[i] << '\n';
    }
  }
  if (!out) return absl::InternalError("cannot write " + path);
  return absl::OkStatus();
}

// With replicas the update's size and the 5 ms target of a shared node
// (issue 4) matter; a whole-GPU node keeps its original report.
void PrintHealth(const HealthResults& health, bool shared) {
  std::string target = std::to_string(health.plugins) + " plugin processes";
  if (shared) {
    target = Verdict(Summarize(health.update_us).p99, 5000, "p99 < 5 ms") +
             ", " + target;
  }
  PrintRow("ListAndWatch update after Xid", health.update_us, 1, target);
  PrintRow("  of which control-socket command", health.control_us, 1, "");
  if (shared) PrintRow("  plugin CPU per update", health.cpu_us, 1, "");
  std::vector<double> first;
  std::vector<double> later;
  for (size_t i = 0; i < health.update_us.size(); ++i) {
    (health.first_on_plugin[i] ? first : later).push_back(health.update_us[i]);
  }
  PrintRow("  first Xid on a fresh plugin", first, 1, "");
  PrintRow("  later Xids", later, 1, "");
}

// The node's shape and the ListAndWatch message sizes, for a shared node.
void PrintShape(const RpcResults& rpcs, const HealthResults& health) {
  const Summary bytes = Summarize(health.message_bytes);
  std::printf(
      "devices:  %d on %d GPUs; ListAndWatch message %zu bytes, "
      "updates %.0f-%.0f bytes (%d devices marked per Xid)\n\n",
      rpcs.devices, rpcs.gpus, rpcs.list_bytes, bytes.min, bytes.max,
      health.devices_per_gpu);
}

void PrintReport(const std::vector<double>& starts, const RpcResults& rpcs,
                 const HealthResults& health) {
  const bool shared = rpcs.devices != rpcs.gpus;
  if (shared) PrintShape(rpcs, health);
  PrintHeader("milliseconds");
  PrintRow("start -> registered", starts, 1e-3,
           Verdict(Summarize(starts).p50 / 1000, 100, "median < 100 ms"));
  std::printf("\n");
  PrintHeader("microseconds (one channel)");
  for (const auto& [name, us] : rpcs.cases) {
    std::string target;
    if (absl::StartsWith(name, "Allocate 1 ")) {
      target = Verdict(Summarize(us).p99, 300, "p99 < 300 us");
    }
    PrintRow(name, us, 1, target);
  }
  PrintHealth(health, shared);
  if (!rpcs.cpu_us.empty()) {
    std::printf("\n%-34s %10s\n", "plugin CPU per call", "us");
    for (const auto& [name, us] : rpcs.cpu_us) {
      std::printf("%-34s %10.1f\n", name.c_str(), us);
    }
  }
  std::printf("\n%-34s %7s %7s %8s %8s %7s  %s\n", "MiB", "VmRSS", "VmHWM",
              "RssAnon", "RssFile", "Pss", "target");
  PrintMemory("registered, stream open", rpcs.registered);
  PrintMemory("after the RPC cases", rpcs.after);
  std::printf("\nload average after: %s\n",
              FirstLine("/proc/loadavg", "").c_str());
}

int Fail(const char* phase, const absl::Status& status) {
  std::fprintf(stderr, "plugin_daemon_bench: %s: %s\n", phase,
               std::string(status.message()).c_str());
  return 1;
}

int Run(int argc, char** argv) {
  PhaseConfig config;
  Paths paths;
  if (!ParseArgs(argc, argv, config, paths)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const ScratchRoot root = ChooseScratchRoot(paths.dir);
  config.scratch_root = root.path;
  PrintMachine(root, config);

  absl::StatusOr<std::vector<double>> starts = MeasureStartToRegistered(config);
  if (!starts.ok()) return Fail("start to registered", starts.status());
  absl::StatusOr<RpcResults> rpcs = MeasureRpcs(config);
  if (!rpcs.ok()) return Fail("RPC round trips", rpcs.status());
  absl::StatusOr<HealthResults> health = MeasureHealthUpdates(config);
  if (!health.ok()) return Fail("health updates", health.status());
  PrintReport(*starts, *rpcs, *health);
  if (!paths.raw.empty()) {
    absl::Status written = WriteRaw(paths.raw, *starts, *rpcs, *health);
    if (!written.ok()) return Fail("--raw", written);
  }
  return 0;
}

}  // namespace
}  // namespace gpulet::bench

int main(int argc, char** argv) { return gpulet::bench::Run(argc, argv); }
