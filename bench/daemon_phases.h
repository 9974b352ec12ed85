// The measurements of `plugin_daemon_bench`, one function per phase. Each
// starts its own `gpulet plugin` processes (BenchPlugin) on the simulated
// machine, drives them over their unix sockets from this process, and returns
// every raw sample so the caller summarises and prints them.
//
// Thread safety: none; run one phase at a time from one thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/bench_plugin.h"

namespace gpulet::bench {

struct PhaseConfig {
  std::string scratch_root;  // where plugin directories go
  std::string machine = "dgx-h100";
  // `--config-file` of every plugin started, e.g. time-slicing replicas;
  // empty: none (one device per GPU).
  std::string config_file;
  int starts = 12;         // plugin starts timed
  int samples = 2000;      // timed calls per RPC case
  int warmup = 50;         // untimed rounds of every RPC case
  int health_events = 56;  // injected Xids (8 per plugin on dgx-h100)
};

// Microseconds from spawning `gpulet plugin` to the kubelet accepting its
// registration, one sample per fresh plugin process.
absl::StatusOr<std::vector<double>> MeasureStartToRegistered(
    const PhaseConfig& config);

struct RpcResults {
  // The plugin's memory once registered, its health monitor running and a
  // ListAndWatch stream open; and again after every RPC case below.
  MemoryKib registered;
  MemoryKib after;
  int devices = 0;        // advertised in the first ListAndWatch message
  int gpus = 0;           // behind them (the replicas "<uuid>::<n>" count once)
  size_t list_bytes = 0;  // serialized size of that first message
  // (case name, round-trip microseconds per call).
  std::vector<std::pair<std::string, std::vector<double>>> cases;
  // Shared GPUs only: (case name, the plugin's CPU microseconds per call,
  // from its CPU time over `samples` more calls of that case in a row).
  std::vector<std::pair<std::string, double>> cpu_us;
};

// One registered plugin with a ListAndWatch stream open (as the kubelet
// keeps one): GetDevicePluginOptions (the gRPC floor), Allocate of 1 and of
// all devices, GetPreferredAllocation of sizes 1, 4 and 8 out of all
// devices; every call on one shared channel, one at a time, the cases in
// round robin. When the GPUs are shared (replica IDs "<uuid>::<n>"), the
// cases are instead Allocate of 1 replica and of 1 replica on every GPU, and
// GetPreferredAllocation of sizes 1, 4, 8 and 16 out of all devices.
absl::StatusOr<RpcResults> MeasureRpcs(const PhaseConfig& config);

struct HealthResults {
  // From just before sending `xid <uuid> 79` on the simulator's control
  // socket to the ListAndWatch message marking that GPU Unhealthy (with
  // time-slicing: every replica "<uuid>::<n>" of it).
  std::vector<double> update_us;
  // The control command's own round trip (part of update_us).
  std::vector<double> control_us;
  // Per sample: whether it was the first Xid its plugin process saw (cold
  // code paths on both ends make that one slower).
  std::vector<bool> first_on_plugin;
  // Shared GPUs only: the plugin's CPU microseconds from sending the Xid to
  // the update's arrival (simulator control thread, monitor, stream writer).
  std::vector<double> cpu_us;
  // Serialized size in bytes of each update message.
  std::vector<double> message_bytes;
  int devices_per_gpu = 0;  // marked Unhealthy by one Xid (the largest seen)
  int plugins = 0;          // fresh plugin processes used
};

// Fatal Xids on alternating GPUs, one at a time, each waited for on the
// stream. A GPU is reported unhealthy once per monitor, so a fresh plugin
// takes over when every GPU of the current one is unhealthy.
absl::StatusOr<HealthResults> MeasureHealthUpdates(const PhaseConfig& config);

}  // namespace gpulet::bench
