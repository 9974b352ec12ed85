// Daemon::Impl, private to src/plugin/daemon: the device plugin process's
// event loop and configuration apply, over the objects that own each
// concern's state:
//   - ServedResources: the runners (one per served resource) and the
//     health their device lists carry (health_composition.h);
//   - MonitorKeeper: the GPU health monitor, reporting to ServedResources;
//   - PassthroughGpus: GPUs for VMs, their plan, watcher and health;
//   - MemoryShares and MpsDaemons: the memory shares' node agent and the
//     MPS control daemons of the GPUs that share memory;
//   - ProcessApiClient: the one API server client (labels, memory shares);
//   - LoopWake: the socket watcher and the eventfd that wake the loop;
//   - TopologyReader and ProcessMetrics.
// Its own files:
//   - daemon.cc: the process's life (signals, the event loop, sessions
//     started and stopped);
//   - daemon_apply.cc: a configuration and a discovered node turned into
//     served resources, at start, at every reload and at a passthrough
//     re-plan.
//
// Threads: the loop thread (Run) owns everything here and is the only one
// that calls Apply; the reporting threads (health monitor, MPS supervisor,
// passthrough and socket watchers, gRPC) reach only the objects above,
// each of which says how it is guarded.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/base/common/signal_channel.h"
#include "src/base/config/config.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/health/xid_policy.h"
#include "src/gpu/nvml/library.h"
#include "src/plugin/daemon/api_client.h"
#include "src/plugin/daemon/daemon.h"
#include "src/plugin/daemon/label_publisher.h"
#include "src/plugin/daemon/loop_wake.h"
#include "src/plugin/daemon/memory_shares.h"
#include "src/plugin/daemon/monitor_keeper.h"
#include "src/plugin/daemon/mps_daemons.h"
#include "src/plugin/daemon/node_config_watch.h"
#include "src/plugin/daemon/passthrough_gpus.h"
#include "src/plugin/daemon/plugin_runner.h"
#include "src/plugin/daemon/prepared_resource.h"
#include "src/plugin/daemon/process_metrics.h"
#include "src/plugin/daemon/served_resources.h"
#include "src/plugin/daemon/topology_reader.h"

namespace gpulet::daemon {

enum class End { kExit, kReload };
struct SessionEnd {
  End end = End::kExit;
  int exit_code = 0;
};

class Daemon::Impl {
 public:
  explicit Impl(DaemonOptions options);
  int Run();

 private:
  // ---- daemon.cc: life of the process ----
  // The label publisher, when labels are enabled; false (logged) when it
  // cannot be made.
  bool CreateLabelPublisher();
  SessionEnd RunSession(SignalChannel& signals);
  absl::StatusOr<device::Node> LoadNode();
  // Discovers the GPUs on the initialised NVML session, a failing GPU kept
  // (Unhealthy) rather than failing the node; `previous` (may be null)
  // supplies the records of GPUs that cannot be read now.
  absl::StatusOr<device::Node> DiscoverNode(const device::Node* previous);
  SessionEnd InitFailed(const std::string& message, SignalChannel& signals);
  SessionEnd Loop(SignalChannel& signals);
  void StopSession();
  void ShutdownNvml();
  int PollTimeoutMs();
  void HandleWake();
  RunnerOptions MakeRunnerOptions();
  // A signal read while a registration waited (see StopRequested), else the
  // next pending one; 0 when none.
  int TakeSignal();
  // Whether SIGTERM or SIGINT is pending: reads the signal channel and keeps
  // what it read for the loop. The runners' registrations ask it.
  bool StopRequested();

  // ---- daemon_apply.cc: configuration + node -> resources ----
  // The configuration re-read, with its health options; an error when the
  // file is rejected (the caller keeps the previous one).
  struct Loaded {
    config::Config config;
    health::MonitorOptions health;
  };
  absl::StatusOr<Loaded> ReadConfig();
  // The file ReadConfig reads in place of the flags' (per-node
  // configuration); nullopt: the flags'.
  std::optional<std::string> ConfigFile() const;
  absl::StatusOr<std::vector<PreparedResource>> Prepare(
      const config::Config& config, const device::Node& node);
  // Serves `node` as `config` says: the first time, or over the resources
  // already served (changed in place, added, removed). Nothing changes
  // when it fails (the configuration does not fit the node).
  absl::Status Apply(const config::Config& config,
                     const health::MonitorOptions& health,
                     const device::Node& node);
  // SIGHUP while serving: re-read the configuration, re-discover, Apply.
  // A rejected file, a failed discovery or a node that does not fit the new
  // configuration change nothing (false).
  bool Reload();
  // Apply again over the same configuration and node, keeping what was
  // selected for passthrough, when the passthrough watcher asked for it.
  void ReplanPassthrough();
  // The node's labels out to the feature file and the Node, when enabled.
  void PublishLabels(const config::Config& config, const device::Node& node);

  // ---- daemon_node_config.cc: per-node configuration ----
  // With node_config on: the Node watched, the configuration its label
  // names chosen and read into config_ (before the first session); false,
  // logged, when there is none to run with.
  bool StartNodeConfig();
  // The configuration the label names now, from the configurations there
  // now; an error (logged, reported on the Node) when there is none.
  absl::StatusOr<NodeConfigChoice> ChooseConfig();
  // After the label changed (or SIGHUP): a reload with the configuration it
  // names, when that is another one than the one in force.
  void FollowNodeConfig(bool force);
  // Reports the choice in force, with `error` when another one was asked
  // for and could not be applied: the Node's annotations and the metric.
  void ReportNodeConfig(const std::string& error);

  const DaemonOptions options_;
  // Set by Run(); the loop thread's only.
  SignalChannel* signals_ = nullptr;
  int stashed_signal_ = 0;
  config::Config config_;
  health::MonitorOptions health_;
  // Process-wide, across reloads; first, so that every part's metrics are
  // registered in it for its whole life.
  ProcessMetrics metrics_;
  // Before everything that holds the client (the label publisher, memory
  // shares' publisher), so that it outlives them.
  ProcessApiClient api_;
  // Null when labels are off.
  std::unique_ptr<LabelPublisher> labels_;
  nvml::LibraryPtr lib_;
  bool nvml_initialized_ = false;
  // The node as last discovered (a reload's `previous`).
  device::Node node_;
  LoopWake wake_;
  // Per-node configuration: null when off; the choice in force; set by the
  // watch's thread when the label changed. Destroyed (its threads joined)
  // before the wake it calls; the API client it uses is above.
  std::atomic<bool> node_config_changed_{false};
  NodeConfigChoice node_config_choice_;
  std::optional<std::string> node_config_metric_;  // the sample's label
  std::unique_ptr<NodeConfigWatch> node_config_;
  // Before the served resources, which publish the memory units to it.
  MemoryShares memory_;
  ServedResources served_;
  // After the served resources, which their reports and callbacks reach:
  // destroyed (threads joined) before them.
  MonitorKeeper monitor_;
  MpsDaemons mps_;
  PassthroughGpus passthrough_;
  // Last: joined before the library it reads goes.
  TopologyReader topology_;
};

}  // namespace gpulet::daemon
