// Daemon::Impl, private to src/plugin/daemon: the state of the device plugin
// process and the two halves of its work, split across two files:
//   - daemon.cc: the process's life (signals, the event loop, start and
//     stop, socket-watcher events);
//   - daemon_apply.cc: turning a configuration and a discovered node into
//     served resources, at start and at every reload, and health events
//     into device health.
//
// Threads: the loop thread (Run) owns everything; the health monitor's
// thread calls OnHealth and the socket watcher's thread OnSocketEvent. What
// they touch is guarded by mu_ (runners_, gpu_uuids_, book_) or handed over
// through pending_ and the wake_ eventfd.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "src/model/allocation/preferred_handler.h"
#include "src/model/allocation/score.h"
#include "src/base/common/unique_fd.h"
#include "src/base/config/config.h"
#include "src/plugin/daemon/daemon.h"
#include "src/plugin/daemon/health_book.h"
#include "src/plugin/daemon/label_publisher.h"
#include "src/plugin/daemon/plugin_runner.h"
#include "src/base/common/signal_channel.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/health/health_monitor.h"
#include "src/gpu/health/passthrough_watcher.h"
#include "src/net/kube/client.h"
#include "src/net/kube/transport.h"
#include "src/base/metrics/gpulet_metrics.h"
#include "src/base/metrics/metrics_server.h"
#include "src/base/metrics/registry.h"
#include "src/gpu/mps/supervisor.h"
#include "src/plugin/memshares/memory_publisher.h"
#include "src/gpu/nvml/library.h"
#include "src/net/podresources/client.h"
#include "src/net/registration/socket_watcher.h"
#include "src/model/resources/passthrough.h"
#include "src/model/resources/resources.h"

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
  void OnSocketEvent(const registration::SocketEvent& event);
  void HandleWake();
  absl::Status StartMetrics();
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
  // A resource as Apply is about to serve it.
  struct Prepared {
    resources::ResourceSpec spec;
    pluginapi::AllocateHandler allocate;
    // Null: the preferred handler every resource shares.
    pluginapi::PreferredHandler preferred = nullptr;
  };
  absl::StatusOr<std::vector<Prepared>> Prepare(const config::Config& config,
                                                const device::Node& node);
  void RecordNode(const device::Node& node) ABSL_LOCKS_EXCLUDED(mu_);
  void ServeResources(std::vector<Prepared> prepared,
                      pluginapi::PreferredHandler preferred)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Serves `node` as `config` says: the first time, or over the resources
  // already served (changed in place, added, removed). Nothing changes
  // when it fails (the configuration does not fit the node).
  absl::Status Apply(const config::Config& config,
                     const health::MonitorOptions& health,
                     const device::Node& node);
  // SIGHUP while serving: re-read the configuration, re-discover, Apply.
  // A rejected file, a failed discovery or a node that does not fit the new
  // configuration change nothing.
  void Reload();
  // The node's labels out to the feature file and the Node, when enabled.
  void PublishLabels(const config::Config& config, const device::Node& node);
  void EnsureMonitor(const health::MonitorOptions& health,
                     const device::Node& node);
  absl::Status EnsureWatcher(const std::vector<std::string>& sockets);
  std::shared_ptr<const allocation::ScoreMatrix> ScoreTopology(
      const device::Node& node);
  // A node's topology as ReadTopologyMeanwhile reads it: `matrix` is set
  // (null when the topology is unavailable) before `read` is notified.
  struct TopologyRead {
    absl::Notification read;
    std::shared_ptr<const allocation::ScoreMatrix> matrix;
  };
  // The preferred-allocation handler over `topology`; a call before it is
  // read waits for it.
  pluginapi::PreferredHandler PreferredOverTopology(
      std::shared_ptr<TopologyRead> topology,
      allocation::PreferredOptions options);
  // Reads `node`'s topology into `topology` on topology_thread_.
  void ReadTopologyMeanwhile(const device::Node& node,
                             std::shared_ptr<TopologyRead> topology);
  // Waits for the topology being read, if any. Before NVML shuts down and
  // before the next one is read.
  void JoinTopology();
  void OnHealth(const health::HealthEvent& event);
  // gpu_index < 0: every device; else only that GPU's devices.
  void PublishDeviceHealth(int gpu_index = -1)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // ---- daemon_passthrough.cc: GPUs for VMs (docs/passthrough.md) ----
  struct PassthroughPrepared {
    std::vector<Prepared> prepared;
    resources::PassthroughPlan plan;
  };
  // The passthrough resources `config` selects from sysfs, never failing:
  // a sysfs that cannot be read, or a selector matching nothing, is logged
  // and the container GPUs are served all the same.
  PassthroughPrepared PreparePassthrough(const config::Config& config);
  // The plan's health into passthrough_health_ and the metric; before the
  // runners are brought to it.
  void RecordPassthrough(const resources::PassthroughPlan& plan)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The watcher `config` asks for, kept while its roots and period stay.
  void EnsurePassthroughWatcher(const config::Config& config)
      ABSL_LOCKS_EXCLUDED(mu_);
  void StopPassthroughWatcher() ABSL_LOCKS_EXCLUDED(mu_);
  // On the watcher's thread: each selected GPU's health from a fresh read,
  // and a re-plan asked of the loop when a GPU must leave the container
  // resources (bound to vfio-pci since) or an mdev appeared.
  void OnPassthroughInventory(const absl::StatusOr<vfio::Inventory>& inventory)
      ABSL_LOCKS_EXCLUDED(mu_);
  // On the loop thread: Apply again over the same configuration and node,
  // keeping what was selected (ReplanPassthrough's keep).
  void ReplanPassthrough() ABSL_LOCKS_EXCLUDED(mu_);
  // From Allocate (a gRPC thread): the GPU's group node is gone.
  void OnPassthroughVanished(const std::string& address,
                             const std::string& reason)
      ABSL_LOCKS_EXCLUDED(mu_);
  void SetPassthroughHealth(const std::string& address,
                            const resources::PassthroughHealth& health)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // ---- daemon_memory.cc: memory shares' node agent ----
  // The publisher `config` asks for, kept when its options are unchanged;
  // null without sharing.memory, a node name or API server access.
  void EnsurePublisher(const config::Config& config);
  // The memory-unit resource's Allocate and preferred handlers.
  void WrapMemoryHandlers(const config::Config& config, Prepared& prepared);
  // The process's one API server client (labels and memory shares share
  // it), built on first use from options_.kubeconfig, else the pod's
  // service account. Main thread only.
  absl::StatusOr<kube::Client*> ApiClient();
  // The memory-unit GPUs and their health to the publisher; starts it the
  // first time.
  void PublishMemoryGpus() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ---- daemon_mps.cc: MPS for memory shares ----
  // The supervisor `config` asks for (kept while the control program and
  // the MPS root stay), told the memory-unit GPUs of `prepared`; none
  // without sharing.memory.mps.enabled. Loop thread; REQUIRES: mu_ not held.
  void EnsureMps(const config::Config& config,
                 const std::vector<Prepared>& prepared)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The supervisor's report (on its thread): the GPU's memory units follow.
  void OnMps(const std::string& uuid, bool up, const std::string& reason)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Marks unhealthy the memory units (in `devices`) of GPUs whose daemon is
  // not up, when MPS is on.
  void MarkMpsDown(std::vector<pluginapi::Device>& devices)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Brings the served memory units of `only_gpu` (all GPUs when empty) to
  // the book's health and MPS's; returns how many changed.
  int ApplyMpsHealth(const std::string& only_gpu = "")
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The runners, for the loop thread to drive without holding mu_ (only the
  // loop thread adds or removes runners, so the pointers stay valid).
  std::vector<PluginRunner*> Runners() ABSL_LOCKS_EXCLUDED(mu_);

  const DaemonOptions options_;
  // Set by Run(); the loop thread's only.
  SignalChannel* signals_ = nullptr;
  int stashed_signal_ = 0;
  config::Config config_;
  health::MonitorOptions health_;
  // Process-wide, across reloads.
  metrics::Registry registry_;
  metrics::GpuletMetrics metrics_;
  std::unique_ptr<metrics::MetricsServer> metrics_server_;
  // The API client (labels, memory shares) and memory shares. Declared
  // before the runners, whose handlers share the publisher, and before the
  // label publisher, so that the clients outlive them.
  std::unique_ptr<kube::Transport> kube_transport_;
  std::unique_ptr<kube::Client> kube_client_;
  std::unique_ptr<podresources::Client> pod_resources_;
  std::shared_ptr<nodeagent::MemoryPublisher> publisher_;
  std::string publisher_key_;  // its options, to tell whether a reload
                               // needs a new one
  bool publisher_started_ = false;
  bool memory_warned_ = false;
  std::string memory_resource_;
  // Null when labels are off.
  std::unique_ptr<LabelPublisher> labels_;
  std::string plugin_dir_;
  std::string kubelet_name_;
  nvml::LibraryPtr lib_;
  bool nvml_initialized_ = false;
  // The node as last discovered (a reload's `previous`).
  device::Node node_;
  // The monitor's GPUs (index, UUID, discovery failed) and options, to tell
  // whether a reload needs a new one.
  std::vector<std::tuple<unsigned, std::string, bool>> monitored_gpus_;
  health::MonitorOptions monitored_options_;
  std::vector<std::string> watched_sockets_;
  std::unique_ptr<registration::SocketWatcher> watcher_;
  std::unique_ptr<health::HealthMonitor> monitor_;
  // The watcher's thread hands events to the loop through `pending_` and
  // wakes it with this eventfd.
  common::UniqueFd wake_;
  absl::Mutex mu_;
  registration::SocketEvent pending_ ABSL_GUARDED_BY(mu_);
  // Added and removed on the loop thread, under mu_; the runners themselves
  // are driven from the loop thread only, their DeviceLists from any.
  std::vector<std::unique_ptr<PluginRunner>> runners_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::string> gpu_uuids_ ABSL_GUARDED_BY(mu_);
  HealthBook book_ ABSL_GUARDED_BY(mu_);
  // MPS for memory shares: whether it is on, and the GPUs whose daemon is
  // up (the supervisor's reports).
  bool mps_enabled_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> mps_up_ ABSL_GUARDED_BY(mu_);
  // The loop thread's. After the runners and mu_, which its reports touch:
  // destroyed (daemons told to quit, thread joined) before them.
  std::unique_ptr<mps::Supervisor> mps_;
  std::string mps_key_;  // control program and root, to tell a reload's need
  // The passthrough resources' names, and each selected GPU's health by
  // PCI address (each advertised mdev's by UUID, listed in passthrough_mdevs_).
  std::set<std::string> passthrough_resources_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> passthrough_mdevs_ ABSL_GUARDED_BY(mu_);
  // What the last plan took out of the container resources, the section it
  // was made from, and whether the watcher asked for a new plan.
  std::set<std::string> passthrough_selected_ ABSL_GUARDED_BY(mu_);
  config::Passthrough passthrough_config_ ABSL_GUARDED_BY(mu_);
  bool passthrough_replan_ ABSL_GUARDED_BY(mu_) = false;
  // The loop thread's: selected again by a re-plan whatever their driver.
  std::set<std::string> passthrough_keep_;
  std::map<std::string, resources::PassthroughHealth> passthrough_health_
      ABSL_GUARDED_BY(mu_);
  vfio::Roots passthrough_roots_ ABSL_GUARDED_BY(mu_);
  // After the runners: its callback reaches them, so it goes first. Its
  // key (roots, period) tells whether a reload needs a new one.
  std::unique_ptr<health::PassthroughWatcher> passthrough_watcher_
      ABSL_GUARDED_BY(mu_);
  std::string passthrough_watcher_key_;  // the loop thread's
  // Reads the topology of the last Apply (ReadTopologyMeanwhile). Last:
  // joined before the library it reads goes.
  std::jthread topology_thread_;
};

}  // namespace gpulet::daemon
