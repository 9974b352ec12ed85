// DraSlices: keeps `gpulet dra`'s ResourceSlices on the API server true,
// from a thread of its own, so that a slow or unreachable API server never
// holds up the kubelet's calls or the health monitor.
//
// Once started it GETs the Node once (its UID makes the Node the slices'
// owner, so they go away with it), then publishes the node's devices
// (draslice::Publisher) with the devices the health board names unhealthy
// left out, or tainted (SetUnhealthyDevices: config::Dra); each board
// change, and each change of that mode, publishes again (the pool
// generation moves only when the published devices change). A failure is logged
// and tried again after a backoff (100 ms doubling to 10 s) until it succeeds,
// the board changes, or the object is destroyed.
//
// The slices are left on the API server when it stops: a restarting pod
// (DaemonSet update, crash) must not make the node's GPUs vanish from the
// scheduler's view; a removed Node takes them with it, and `gpulet dra`
// started again finds them unchanged and writes nothing (docs/dra.md).
//
// Ownership: the client, the board and the caller's data are borrowed and
// must outlive the object; its thread is joined by the destructor. Thread
// safety: construct and destroy from one thread; published() from any.
#pragma once

#include <cstdint>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/base/config/config.h"
#include "src/base/metrics/dra_metrics.h"
#include "src/dra/kubelet/device_health.h"
#include "src/dra/slices/slice_builder.h"
#include "src/net/kube/client.h"

namespace gpulet::daemon {

class DraSlices {
 public:
  // `devices` without unhealthy ones: the board supplies them. `options`
  // names the node (node_name) and how to publish; its node_uid is filled
  // in from the Node. Each attempt is counted in `metrics` (may be null),
  // and the devices by state once published. Starts the thread at once.
  DraSlices(kube::Client& client, dra::DeviceHealthBoard& board,
            draslice::NodeDevices devices, draslice::SliceOptions options,
            const metrics::DraMetrics* metrics = nullptr);
  ~DraSlices();
  DraSlices(const DraSlices&) = delete;
  DraSlices& operator=(const DraSlices&) = delete;

  // The pool generation last published; -1 before the first success.
  int64_t published() const;

  // Unhealthy devices dropped or tainted, and the taints' effects, from
  // now on (a configuration reload); publishes again when they changed.
  void SetUnhealthyDevices(const config::Dra& dra);

 private:
  void Run(std::stop_token stop);
  // Waits until the board changed or `timeout` passed; false when stopping.
  bool WaitForWork(absl::Duration timeout);
  absl::StatusOr<std::string> NodeUid(std::stop_token stop);

  kube::Client& client_;
  dra::DeviceHealthBoard& board_;
  // After a publish: its outcome counted, the devices by state.
  void Count(const absl::Status& status,
             const draslice::SliceOptions& options) const;

  draslice::NodeDevices devices_;  // read by the thread only
  const metrics::DraMetrics* const metrics_;
  const std::string node_name_;
  int subscription_ = 0;
  mutable absl::Mutex mu_;
  draslice::SliceOptions options_ ABSL_GUARDED_BY(mu_);
  bool dirty_ ABSL_GUARDED_BY(mu_) = true;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t published_ ABSL_GUARDED_BY(mu_) = -1;
  std::jthread thread_;  // last: starts after every member above exists
};

}  // namespace gpulet::daemon
