// NodeConfigWatch: the device plugin's side of per-node configuration
// (node_config_choice.h, docs/configuration.md): a list and watch of its
// own Node, keeping the value of the label that names the configuration,
// and a reporter that writes back which configuration is in force.
//
// The watch runs on a thread of its own (kube::ListWatcher: re-lists after
// a 410, resumes after a dropped connection) and calls `on_change` when the
// Node is first listed and whenever the label's value changes (an empty
// value counts as no label): a daemon that started without the Node, the API
// server not answering, follows its label once it is read. The reporter
// is a second thread: Report() hands it the state to write and returns at
// once, so the daemon's loop never waits on the API server; it merge-
// patches the Node's annotations
//   gpulet.dev/device-plugin-config        the configuration in force
//   gpulet.dev/device-plugin-config-error  why the one the label asks for
//                                          is not (removed when it is)
// retrying with a backoff until it succeeds or a newer state replaces it.
//
// Thread safety: Label(), WaitListed() and Report() may be called from any
// thread; `on_change` runs on the watch thread and must not call back into
// this object. The client and the clock are borrowed and outlive it; the
// destructor stops both threads and joins them.
#pragma once

#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/net/kube/client.h"
#include "src/plugin/daemon/node_config_choice.h"

namespace gpulet::daemon {

inline constexpr char kNodeConfigAnnotation[] =
    "gpulet.dev/device-plugin-config";
inline constexpr char kNodeConfigErrorAnnotation[] =
    "gpulet.dev/device-plugin-config-error";

// The label's value in a Node object; nullopt when absent or empty.
std::optional<std::string> NodeConfigLabel(const nlohmann::json& node,
                                           const std::string& label);

// The merge patch that reports `applied` (the configuration in force, ""
// for none) and `error` ("" removes the annotation).
nlohmann::json NodeConfigReportPatch(const std::string& applied,
                                     const std::string& error);

class NodeConfigWatch {
 public:
  NodeConfigWatch(NodeConfigOptions options, kube::Client& api,
                  const common::Clock& clock, std::function<void()> on_change);
  ~NodeConfigWatch();
  NodeConfigWatch(const NodeConfigWatch&) = delete;
  NodeConfigWatch& operator=(const NodeConfigWatch&) = delete;

  // Starts both threads. REQUIRES: called once.
  void Start();
  // Waits until the Node has been listed once, up to `timeout`; false if
  // it has not (the API server is not answering).
  bool WaitListed(absl::Duration timeout);
  // The label's value as last seen (nullopt: absent, or not listed yet).
  std::optional<std::string> Label() const;
  // The state to write to the Node's annotations (see above).
  void Report(const std::string& applied, const std::string& error);

 private:
  void Watch(std::stop_token stop);
  void Reporter(std::stop_token stop);
  void See(const nlohmann::json& node);

  const NodeConfigOptions options_;
  kube::Client& api_;
  const common::Clock& clock_;
  const std::function<void()> on_change_;
  mutable absl::Mutex mu_;
  bool listed_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<std::string> label_ ABSL_GUARDED_BY(mu_);
  // The next state to write; nullopt when written.
  std::optional<nlohmann::json> pending_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::jthread watch_;
  std::jthread reporter_;
};

}  // namespace gpulet::daemon
