// idle_cpu_bench: what an idle `gpulet plugin` costs, registered with a fake
// kubelet on the NVML simulator with ListAndWatch streams open, as on a node
// where nothing happens. Two scenarios by default:
//   - dgx-h100 (8 GPUs), two ListAndWatch streams on nvidia.com/gpu;
//   - islands-16 (16 GPUs) shared by time-slicing (bench/configs/
//     time-slicing-48.yaml: 768 devices), one stream.
// After the health monitor has started and every stream has its first
// list, it waits 2 s for start-up work to settle, then measures for
// --seconds (default 60): per thread (/proc/<pid>/task/<tid>) the wake-ups
// (voluntary + non-voluntary context switches from `status`) and the CPU
// time (`schedstat`), reported per minute. gpulet's own threads should
// show none; gRPC 1.51's two timer threads (grpc_global_timer,
// timer_manager) wake about once a second in any gRPC process. A plain
// program, not a Google Benchmark; it accepts and
// ignores --benchmark_* flags so scripts/run-benchmarks runs it like the
// others. bench/idle-cpu wraps it.
//
//   idle_cpu_bench [--seconds=N] [--machine=PROFILE [--config=FILE]
//                  [--streams=N]] [--dir=PATH]
// --machine runs one scenario (default config none, 2 streams) instead of
// the two above.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "bench/bench_plugin.h"
#include "grpcpp/grpcpp.h"

namespace gpulet::bench {
namespace {

struct Scenario {
  std::string title;
  std::string machine;
  std::string config_file;  // empty: none
  int streams = 2;
};

struct ThreadSample {
  std::string name;   // the thread's comm
  long switches = 0;  // voluntary + non-voluntary context switches
  double cpu_ns = 0;  // schedstat: time on a CPU
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

bool ReadThread(const std::string& dir, ThreadSample& out) {
  std::istringstream status(ReadFile(dir + "/status"));
  std::string line;
  bool found = false;
  while (std::getline(status, line)) {
    long value = 0;
    if (absl::StartsWith(line, "Name:")) {
      out.name = line.substr(line.find_first_not_of(" \t", 5));
    } else if ((absl::StartsWith(line, "voluntary_ctxt_switches:") ||
                absl::StartsWith(line, "nonvoluntary_ctxt_switches:")) &&
               absl::SimpleAtoi(line.substr(line.find(':') + 1), &value)) {
      out.switches += value;
      found = true;
    }
  }
  std::istringstream schedstat(ReadFile(dir + "/schedstat"));
  schedstat >> out.cpu_ns;
  return found;
}

// Samples per thread id.
std::map<std::string, ThreadSample> SampleThreads(pid_t pid) {
  std::map<std::string, ThreadSample> out;
  std::error_code ec;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    ThreadSample t;
    if (ReadThread(entry.path().string(), t)) {
      out[entry.path().filename().string()] = t;
    }
  }
  return out;
}

// ListAndWatch streams held open by the benchmark, as the kubelet holds one
// per resource; each counts the messages it got.
class Streams {
 public:
  Streams(const BenchPlugin& plugin, int n) {
    {
      absl::MutexLock lock(&mu_);
      without_list_ = n;
    }
    for (int i = 0; i < n; ++i) {
      auto s = std::make_unique<Stream>();
      s->stub = plugin.Dial();
      Stream* raw = s.get();
      streams_.push_back(std::move(s));
      raw->reader = std::thread([this, raw] { Read(*raw); });
    }
  }
  ~Streams() {
    for (auto& s : streams_) s->context.TryCancel();
    for (auto& s : streams_) s->reader.join();
  }
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;

  // Waits until every stream got its first list.
  bool WaitForFirstLists() {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(
        absl::Condition(
            +[](int* pending) { return *pending == 0; }, &without_list_),
        absl::Seconds(20));
  }
  int messages() {
    absl::MutexLock lock(&mu_);
    return messages_;
  }

 private:
  struct Stream {
    std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
    grpc::ClientContext context;
    std::thread reader;
  };
  void Read(Stream& s) {
    auto reader = s.stub->ListAndWatch(&s.context, v1beta1::Empty());
    v1beta1::ListAndWatchResponse response;
    bool first = true;
    while (reader->Read(&response)) {
      absl::MutexLock lock(&mu_);
      ++messages_;
      if (first) --without_list_;
      first = false;
    }
    reader->Finish();
  }

  absl::Mutex mu_;
  int messages_ ABSL_GUARDED_BY(mu_) = 0;
  int without_list_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Stream>> streams_;
};

void Report(const Scenario& scenario,
            const std::map<std::string, ThreadSample>& before,
            const std::map<std::string, ThreadSample>& after, double elapsed_s,
            int messages) {
  const double per_min = 60.0 / elapsed_s;
  long total_switches = 0;
  double total_cpu_ns = 0;
  std::printf("%s: %zu threads, %.1f s, %d ListAndWatch message(s) meanwhile\n",
              scenario.title.c_str(), after.size(), elapsed_s, messages);
  std::printf("    %-8s %-16s %12s %14s\n", "tid", "thread", "wake-ups/min",
              "CPU ms/min");
  for (const auto& [tid, t] : after) {
    auto it = before.find(tid);
    const long switches =
        t.switches - (it == before.end() ? 0 : it->second.switches);
    const double cpu_ns =
        t.cpu_ns - (it == before.end() ? 0 : it->second.cpu_ns);
    total_switches += switches;
    total_cpu_ns += cpu_ns;
    std::printf("    %-8s %-16s %12.1f %14.3f\n", tid.c_str(), t.name.c_str(),
                switches * per_min, cpu_ns / 1e6 * per_min);
  }
  std::printf("    %-25s %12.1f %14.3f  (%.5f%% of one core)\n", "total",
              total_switches * per_min, total_cpu_ns / 1e6 * per_min,
              100.0 * total_cpu_ns / 1e9 / elapsed_s);
}

int RunScenario(const Scenario& scenario, int seconds,
                const ScratchRoot& root) {
  PluginOptions options;
  options.machine = scenario.machine;
  options.config_file = scenario.config_file;
  BenchPlugin plugin(root.path, options);
  auto fail = [](const absl::Status& s) {
    std::fprintf(stderr, "idle_cpu_bench: %s\n", s.ToString().c_str());
    return 1;
  };
  if (absl::Status s = plugin.Start(); !s.ok()) return fail(s);
  if (absl::Status s = plugin.WaitForHealthMonitor(); !s.ok()) return fail(s);
  {
    Streams streams(plugin, scenario.streams);
    if (!streams.WaitForFirstLists()) {
      return fail(absl::DeadlineExceededError(
          "a ListAndWatch stream got no list within 20 s"));
    }
    // Let start-up work (registration, the first lists) settle.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const pid_t pid = plugin.pid();
    const int messages = streams.messages();
    const std::map<std::string, ThreadSample> before = SampleThreads(pid);
    const auto start = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    const std::map<std::string, ThreadSample> after = SampleThreads(pid);
    const double elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    Report(scenario, before, after, elapsed_s, streams.messages() - messages);
  }
  if (absl::Status s = plugin.Stop(); !s.ok()) return fail(s);
  return 0;
}

}  // namespace
}  // namespace gpulet::bench

int main(int argc, char** argv) {
  using gpulet::bench::Scenario;
  int seconds = 60;
  Scenario single{"", "", "", 2};
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (absl::StartsWith(arg, "--benchmark_")) continue;
    if (absl::StartsWith(arg, "--seconds=") &&
        absl::SimpleAtoi(arg.substr(10), &seconds) && seconds > 0) {
      continue;
    }
    if (absl::StartsWith(arg, "--streams=") &&
        absl::SimpleAtoi(arg.substr(10), &single.streams) &&
        single.streams >= 0) {
      continue;
    }
    if (absl::StartsWith(arg, "--machine=")) {
      single.machine = arg.substr(10);
      continue;
    }
    if (absl::StartsWith(arg, "--config=")) {
      single.config_file = arg.substr(9);
      continue;
    }
    if (absl::StartsWith(arg, "--dir=")) {
      dir = arg.substr(6);
      continue;
    }
    std::fprintf(stderr,
                 "usage: idle_cpu_bench [--seconds=N] [--machine=PROFILE "
                 "[--config=FILE] [--streams=N]] [--dir=PATH]\n");
    return 2;
  }
  std::vector<Scenario> scenarios;
  if (!single.machine.empty()) {
    single.title =
        single.machine +
        (single.config_file.empty() ? "" : ", " + single.config_file) + ", " +
        std::to_string(single.streams) + " stream(s)";
    scenarios.push_back(single);
  } else {
    scenarios.push_back(
        {"dgx-h100, 2 ListAndWatch streams", "dgx-h100", "", 2});
    scenarios.push_back(
        {"islands-16, time-slicing 48 replicas, 1 stream", "islands-16",
         std::string(GPULET_SOURCE_DIR) + "/bench/configs/time-slicing-48.yaml",
         1});
  }
  const gpulet::bench::ScratchRoot root = gpulet::bench::ChooseScratchRoot(dir);
  std::printf("idle `gpulet plugin`, sockets in %s\n",
              root.description.c_str());
  for (const Scenario& scenario : scenarios) {
    if (int rc = gpulet::bench::RunScenario(scenario, seconds, root); rc != 0) {
      return rc;
    }
  }
  return 0;
}
