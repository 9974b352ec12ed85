// DeviceHealthBoard: the health of the node's DRA devices, by DRA device
// name, as the daemon learns it from the health monitor (a fatal Xid marks
// a GPU and its MIG devices unhealthy). Two kinds of reader consume it:
//  - the DRA health service streams it to the kubelet (NodeWatchResources),
//    waiting with WaitForChange;
//  - the ResourceSlice publisher subscribes with OnChange and leaves
//    unhealthy devices out of the slices (or taints them).
//
// Thread safety: every method may be called from any thread. Listeners are
// called on the thread of Set, without the board's lock held, in the order
// the changes were made; they must be quick and must not call Subscribe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gpulet::dra {

// What made a device unhealthy, as far as the ResourceSlices' taints tell
// it (slice_builder.h); empty for a healthy device.
struct DeviceFault {
  uint64_t xid = 0;   // the Xid that did, 0 for none (ECC, a failed query)
  bool lost = false;  // its GPU is lost (fallen off the bus)

  bool operator==(const DeviceFault&) const = default;
};

struct DeviceHealth {
  std::string device;  // DRA device name, "gpu-0"
  bool healthy = true;
  std::string message;       // why, when unhealthy
  int64_t updated_unix = 0;  // seconds
  DeviceFault fault = {};

  bool operator==(const DeviceHealth&) const = default;
};

class DeviceHealthBoard {
 public:
  using Listener = std::function<void(const std::vector<DeviceHealth>&)>;

  // Records the entries that differ from what the board holds (by healthy,
  // message and fault) and, if any did, bumps the version, wakes waiters and
  // calls the listeners with those entries.
  void Set(const std::vector<DeviceHealth>& health);

  // Every device the board knows, by name.
  std::map<std::string, DeviceHealth> Snapshot() const;
  std::set<std::string> Unhealthy() const;
  // The unhealthy devices with what made them so.
  std::map<std::string, DeviceFault> Faults() const;
  uint64_t version() const;

  // Called after each change with the changed entries. Returns an id for
  // Unsubscribe.
  int Subscribe(Listener listener);
  void Unsubscribe(int id);

  // Blocks until version() > seen, Close() was called, or `timeout`
  // passed. Returns the version then.
  uint64_t WaitForChange(uint64_t seen, absl::Duration timeout) const;
  // Wakes every waiter for good; WaitForChange returns at once from now on.
  void Close();
  bool closed() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, DeviceHealth> devices_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex listeners_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::map<int, Listener> listeners_ ABSL_GUARDED_BY(listeners_mu_);
  int next_id_ ABSL_GUARDED_BY(listeners_mu_) = 0;
};

}  // namespace gpulet::dra
