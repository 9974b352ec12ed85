// BenchPlugin: one `gpulet plugin` child process on the NVML simulator,
// registered with an in-process FakeKubelet, in a fresh scratch directory
// (on tmpfs when there is one): the set-up every daemon benchmark starts
// from. The child is spawned exactly as the daemon integration tests spawn
// it (test/integration/daemon_process.h), so the benchmarks measure the same
// binary the tests check.
//
// Ownership: owns its scratch directory, the fake kubelet and the child; the
// destructor kills the child if it still runs, stops the kubelet and removes
// the directory. Thread safety: none; one benchmark thread.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "test/integration/daemon_fake_kubelet.h"
#include "test/integration/daemon_process.h"

namespace gpulet::bench {

// Where scratch directories go: `requested` if not empty, else /dev/shm when
// it is a tmpfs, else /tmp. `description` says which, and whether it is a
// tmpfs, for the report.
struct ScratchRoot {
  std::string path;
  std::string description;
};
ScratchRoot ChooseScratchRoot(const std::string& requested);

struct PluginOptions {
  std::string machine = "dgx-h100";
  // Passed as `--config-file` (NVIDIA's `version: v1` file); empty: none.
  std::string config_file;
  // Set GPULET_SIM_SOCKET so faults can be injected with SendControlCommand.
  bool sim_control = false;
};

class BenchPlugin {
 public:
  BenchPlugin(std::string root, PluginOptions options);
  ~BenchPlugin();
  BenchPlugin(const BenchPlugin&) = delete;
  BenchPlugin& operator=(const BenchPlugin&) = delete;

  // Creates the directory, starts the kubelet, spawns the plugin and waits
  // until the kubelet accepted its registration (after dialling it back).
  absl::Status Start();
  // Microseconds from just before the spawn to the accepted registration.
  double start_to_registered_us() const { return start_to_registered_us_; }
  // Waits for the log line the health monitor writes once every GPU is
  // registered for events (faults injected earlier would be missed).
  absl::Status WaitForHealthMonitor() const;
  // SIGTERM, then waits for exit status 0.
  absl::Status Stop();

  pid_t pid() const;
  std::string socket_path() const { return plugins_dir_ + "/gpulet-gpu.sock"; }
  std::string sim_socket_path() const { return dir_ + "/sim.sock"; }
  std::unique_ptr<v1beta1::DevicePlugin::Stub> Dial() const;

 private:
  absl::Status Failure(const std::string& what) const;

  const std::string root_;
  const PluginOptions options_;
  std::string dir_;
  std::string plugins_dir_;
  double start_to_registered_us_ = 0;
  std::unique_ptr<testing::FakeKubelet> kubelet_;
  std::unique_ptr<testing::DaemonProcess> process_;
};

// A process's memory, in kB, from /proc/<pid>/status and smaps_rollup; -1
// where a field cannot be read. RssFile counts the resident pages of mapped
// files (the executable and shared libraries, shared with every other process
// mapping them); Pss divides each shared page among the processes using it.
struct MemoryKib {
  long rss = -1;       // VmRSS
  long hwm = -1;       // VmHWM: peak VmRSS
  long rss_anon = -1;  // RssAnon: heap, stacks, private data
  long rss_file = -1;  // RssFile
  long pss = -1;       // Pss
};
MemoryKib ReadMemory(pid_t pid);

// CPU time in microseconds the process has used so far, exited threads
// included (utime + stime of /proc/<pid>/stat: 10 ms resolution), or -1 if
// unreadable. Unlike a round trip it does not grow when other processes load
// the machine.
double CpuMicros(pid_t pid);

// Per-thread CPU nanoseconds of a process (/proc/<pid>/task/*/schedstat),
// for short intervals where 10 ms is too coarse: CPU used between two
// snapshots by the threads alive at the second (a thread that exits in
// between is missed).
using ThreadCpu = std::map<std::string, double>;
ThreadCpu ReadThreadCpu(pid_t pid);
double CpuMicrosBetween(const ThreadCpu& before, const ThreadCpu& after);

}  // namespace gpulet::bench
