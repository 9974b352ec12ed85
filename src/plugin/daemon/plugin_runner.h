// PluginRunner: keeps one resource served and registered with the kubelet.
// Owns the resource's DeviceList and PluginServer; ServedResources owns the
// runners and the daemon drives them from its event loop.
//
// A (re)start is always Stop() (ending ListAndWatch streams, removing the
// socket), Start(), then Register: the kubelet drops whichever client is
// registered for a resource when an old stream ends, so the old server must
// be gone before the new registration. A failed start or registration is
// retried with Backoff (100 ms doubling to 5 s) until it succeeds or the
// runner is stopped (while the kubelet is unreachable only Register is
// retried; the server keeps running); the daemon's loop calls RetryIfDue() when
// retry_at() passes, so nothing here sleeps.
//
// Which restarts are needed is decided from the files, not from the order
// of inotify events: after a successful start the runner records the
// identity (device, inode, ctime) of its socket and, after registering, of
// kubelet.sock. Its socket missing or replaced, or kubelet.sock created and
// different from the one it registered with, means restart; anything else
// (such as the deletion event caused by its own previous restart) is
// ignored. So a kubelet restart, which deletes our socket and recreates
// kubelet.sock, causes exactly one registration however its events are
// batched.
//
// The kubelet can still drop a registration it has just accepted: when the
// old client's stream ends after the new client registered (its goroutine
// runs late), it disconnects the new one, and the resource stays at 0
// allocatable until someone registers again. So when every ListAndWatch
// stream of the current server ended by the client's doing while
// registered (PluginOptions::on_unwatched) and, kUnwatchedGrace later,
// still none is open, the runner registers again without restarting the
// server (at most once per grace period). The grace keeps a stream of
// another client that ended just before the kubelet opened its own from
// counting: registering again while the kubelet watches would leave it
// two clients.
//
// A configuration reload changes a running resource in place (Update): the
// new device list goes out on the open ListAndWatch streams and the new
// handlers answer the next calls; the server is not restarted and the
// resource not registered again, so the kubelet never sees the resource
// without devices.
//
// Thread safety: all methods from the daemon's loop thread only, except
// devices(), whose DeviceList is thread-safe (the health monitor writes it).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/base/common/backoff.h"
#include "src/base/metrics/gpulet_metrics.h"
#include "src/model/pluginapi/handlers.h"
#include "src/model/resources/resources.h"
#include "src/net/registration/registrar.h"
#include "src/plugin/server/device_list.h"
#include "src/plugin/server/plugin_server.h"

namespace gpulet::daemon {

struct RunnerOptions {
  std::string plugin_dir;      // directory of the kubelet socket
  std::string kubelet_socket;  // full path of kubelet.sock
  absl::Duration register_timeout = absl::Seconds(10);
  common::BackoffPolicy backoff;
  // Counters for allocations, registrations and restarts; null: none.
  const metrics::GpuletMetrics* metrics = nullptr;
  // Asked while a registration waits for the kubelet; true abandons it (a
  // stop was requested). Empty: registrations run to their timeout.
  registration::CancelCheck cancel_registration = nullptr;
  // The handlers wait on the API server (the memory-unit resource):
  // PluginOptions::handlers_wait.
  bool handlers_wait = false;
  // Wakes the daemon's loop, which then calls Reconcile; called from the
  // server's loop thread when the kubelet stopped watching the resource.
  // Empty: the runner notices at the next Reconcile.
  std::function<void()> wake = nullptr;
};

// What identifies one incarnation of a file; nullopt when it is missing.
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t ctime_sec = 0;
  int64_t ctime_nsec = 0;
  bool operator==(const FileIdentity&) const = default;
};
std::optional<FileIdentity> IdentifyFile(const std::string& path);

// How long after the last stream ended the runner checks that none is open
// before it registers again.
inline constexpr absl::Duration kUnwatchedGrace = absl::Seconds(1);

class PluginRunner {
 public:
  // `allocate` answers Allocate (allocation::EnvvarResponse when empty),
  // `preferred` answers GetPreferredAllocation (allocation::SimplePreferred
  // when empty).
  PluginRunner(resources::ResourceSpec spec, RunnerOptions options,
               pluginapi::AllocateHandler allocate = nullptr,
               pluginapi::PreferredHandler preferred = nullptr);
  ~PluginRunner();
  PluginRunner(const PluginRunner&) = delete;
  PluginRunner& operator=(const PluginRunner&) = delete;

  const std::string& resource_name() const { return spec_.resource_name; }
  // Replaces the devices (health included; a no-op when equal) and the
  // handlers, keeping the server, its streams and the registration.
  void Update(std::vector<pluginapi::Device> devices,
              pluginapi::AllocateHandler allocate,
              pluginapi::PreferredHandler preferred);
  const std::string& socket_name() const { return spec_.socket_name; }
  plugin::DeviceList& devices() { return devices_; }
  bool registered() const { return registered_; }

  // Serves and registers for the first time; on failure a retry is
  // scheduled.
  void Start();
  // Restarts now (logging `reason`) and registers; on failure a retry is
  // scheduled.
  void Restart(const std::string& reason);
  // Called for every socket watcher event and wake: restarts if the socket
  // is gone or replaced, or if `kubelet_socket_created` and kubelet.sock is
  // not the one registered with. While a retry is pending, a new
  // kubelet.sock makes the retry happen now, with a fresh backoff. When the
  // kubelet stopped watching the registered server, schedules a new
  // registration.
  void Reconcile(bool kubelet_socket_created);
  // When the pending retry or watch check is due, on common::RealClock
  // (monotonic); nullopt when none is pending.
  std::optional<absl::Time> retry_at() const {
    if (!unwatched_check_at_.has_value()) return retry_at_;
    if (!retry_at_.has_value()) return unwatched_check_at_;
    return std::min(*retry_at_, *unwatched_check_at_);
  }
  void RetryIfDue(absl::Time now);
  // Ends streams, removes the socket, cancels any retry.
  void Stop();

 private:
  // Registers, first (re)starting the server when `restart_server`.
  void Attempt(bool restart_server);
  void Fail(const absl::Status& status);
  bool ServerReusable() const;
  // on_unwatched, on the server's loop thread.
  void Unwatched(uint64_t run);
  // Registers again if the kubelet still has no stream open.
  void CheckWatched();

  struct Handlers {
    pluginapi::AllocateHandler allocate;
    pluginapi::PreferredHandler preferred;
  };
  std::shared_ptr<const Handlers> handlers() const;

  resources::ResourceSpec spec_;  // names only: its devices moved into devices_
  const RunnerOptions options_;
  plugin::DeviceList devices_;
  // Swapped by Update while the server's threads call through it.
  mutable absl::Mutex handlers_mu_;
  std::shared_ptr<const Handlers> handlers_ ABSL_GUARDED_BY(handlers_mu_);
  std::unique_ptr<plugin::PluginServer> server_;
  common::Backoff backoff_;
  bool registered_ = false;
  std::optional<absl::Time> retry_at_;
  std::optional<FileIdentity> socket_id_;
  std::optional<FileIdentity> kubelet_id_;
  std::string last_error_;
  absl::StatusCode last_failure_ = absl::StatusCode::kOk;
  // The server run the kubelet stopped watching (0: none); written by the
  // server's loop thread, taken by Reconcile.
  std::atomic<uint64_t> unwatched_run_ = 0;
  // When to check that the kubelet still watches (after on_unwatched).
  std::optional<absl::Time> unwatched_check_at_;
};

}  // namespace gpulet::daemon
