// Daemon: the device plugin process. Loads NVML, discovers the GPUs, serves
// one PluginServer per resource in the kubelet's plugin directory,
// registers each with the kubelet, keeps device health current through the
// HealthMonitor and re-registers whenever the kubelet restarts or a plugin
// socket disappears.
//
// Run() is the whole life of the process:
//   - SIGHUP, SIGTERM and SIGINT are blocked before any thread exists and
//     read from a signalfd by Run()'s event loop;
//   - NVML failing to load or initialise, or a node without GPUs, ends Run()
//     with 1 when fail_on_init_error, else is logged once and Run() waits for
//     a signal, serving nothing (NVIDIA's failOnInitError=false);
//   - SIGHUP reloads: everything is stopped, the configuration re-read,
//     NVML re-initialised, GPUs rediscovered, servers restarted and
//     registered again;
//   - a node the configuration does not fit (see BuildResources) ends Run()
//     with 1, whatever failOnInitError says, as NVIDIA's plugin does;
//   - with labels enabled, every start and reload that serves publishes the
//     node's labels (label_publisher.h); a failure to publish is logged and
//     serving goes on;
//   - with per-node configurations (node_config), a change of the Node's
//     label is a reload with the file it names; the Node's annotations and
//     gpulet_node_config say which one is in force (node_config_watch.h);
//   - SIGTERM / SIGINT stop cleanly (health monitor, socket watcher,
//     servers with their streams and sockets, NVML) and Run() returns 0.
//
// Ownership: the Daemon owns the NVML library, the runners (servers and
// device lists), the watcher and the monitor. Thread safety: construct and
// Run() on the main thread before any other thread is created; Run() once.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/base/common/backoff.h"
#include "src/base/config/config.h"
#include "src/gpu/health/xid_policy.h"
#include "src/gpu/nvml/library_search.h"
#include "src/plugin/daemon/label_publisher.h"
#include "src/plugin/daemon/node_config_choice.h"

namespace gpulet::daemon {

struct DaemonOptions {
  // The resolved configuration (flags > environment > file) the first
  // session runs with. On SIGHUP `reload_config`, when set, is asked for a
  // fresh one (the file re-read); if it fails the error is logged and the
  // previous configuration kept. Its argument names the file to read in
  // place of the flags' --config-file ("": none), with per-node
  // configurations; nullopt: the flags' file. The NVML, kubelet-socket and
  // failOnInitError fields below are the ones used, not config.flags'.
  config::Config config;
  std::function<absl::StatusOr<config::Config>(
      const std::optional<std::string>& file)>
      reload_config;
  // Per-node configuration (node_config_choice.h), on when `dir` is set:
  // the configuration is the file the Node's label names, read before the
  // first session (`config` above is then only the flags and environment)
  // and read again, as a reload, whenever the label changes. Needs
  // `reload_config` and API access (`kubeconfig` or the service account).
  NodeConfigOptions node_config;
  nvml::LoadOptions nvml;
  std::string kubelet_socket = "/var/lib/kubelet/device-plugins/kubelet.sock";
  bool fail_on_init_error = true;
  std::string sysfs_root = "/sys";
  health::MonitorOptions health;
  std::string socket_prefix = "gpulet";
  // Where the CDI spec goes when a CDI strategy is configured.
  std::string cdi_spec_dir = "/var/run/cdi";
  absl::Duration register_timeout = absl::Seconds(10);
  common::BackoffPolicy backoff;
  // Memory shares (sharing.memory, docs/sharing.md): this Node's name
  // (NODE_NAME from the downward API), the API server (a kubeconfig path,
  // empty: the pod's service account) and the kubelet's pod-resources
  // socket. Without a node name or API access the memory units are still
  // served, but no Node annotation is published and preferred allocation
  // packs by the policy alone.
  std::string node_name;
  std::string kubeconfig;
  std::string pod_resources_socket =
      "/var/lib/kubelet/pod-resources/kubelet.sock";
  // Node labels (docs/labels.md): published after every start and reload
  // that serves, when a feature file or a node name is set. A node name
  // that is not usable, or an API server that cannot be found, ends Run()
  // with 1 before anything is served.
  LabelOptions labels;
};

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Runs until SIGTERM/SIGINT (returns 0) or a fatal start-up error
  // (returns 1, the error logged).
  int Run();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpulet::daemon
