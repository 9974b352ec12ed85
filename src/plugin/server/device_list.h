// DeviceList: the devices one resource advertises to the kubelet
// (pluginapi::Device), with their health, versioned so ListAndWatch streams
// can wait for the next change.
//
// Writers (discovery on start and reload, the health monitor) replace the list
// or flip a device's health; readers take an immutable snapshot. Every real
// change (any field of any device, or the set of devices) bumps the version
// by one and calls the watchers; a no-op write does neither. The first
// version is 1. Watchers are how ListAndWatch streams learn of a change
// without a thread waiting (or polling) per stream.
//
// Thread safety: all methods are thread-safe. Watchers run on the thread
// that made the change (or called Close / Notify), one at a time, with no
// lock of the list's data held: they may call Snapshot() but not AddWatcher
// or RemoveWatcher, and must not block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/model/pluginapi/device.h"

namespace gpulet::plugin {

class DeviceList {
 public:
  explicit DeviceList(std::vector<pluginapi::Device> devices = {});

  pluginapi::DeviceSnapshotPtr Snapshot() const;

  // Replaces every device. Bumps the version only if something changed.
  void Replace(std::vector<pluginapi::Device> devices);
  // Sets the health of every device whose gpu_index is `gpu_index`. Returns
  // how many devices changed.
  int SetGpuHealth(int gpu_index, bool healthy);
  // Sets the health of the MIG devices (and their replicas) whose
  // gpu_index, gpu_instance_id and compute_instance_id match; a negative
  // compute_instance_id matches every compute instance of the GPU instance
  // (NVML named only the GPU instance). Full GPUs (gpu_instance_id -1) are
  // never matched. Returns how many devices changed; 0 also when no device
  // matches, so the caller can fall back to SetGpuHealth.
  int SetMigHealth(int gpu_index, int gpu_instance_id, int compute_instance_id,
                   bool healthy);
  // Sets the health of one device by ID. Returns false if the ID is unknown.
  bool SetHealth(const std::string& id, bool healthy);

  // Calls `on_change` after every change of the version and after Close(),
  // until RemoveWatcher(returned id). The watcher reads what changed with
  // Snapshot(); several changes may be seen by one call.
  using WatcherId = uint64_t;
  WatcherId AddWatcher(std::function<void()> on_change);
  // Once it returns, the watcher is not running and is never called again.
  // REQUIRES: not called from a watcher.
  void RemoveWatcher(WatcherId id);
  // Calls every watcher, as a change does: how one reader group (a
  // PluginServer being stopped) makes its own watchers look at its state.
  void NotifyWatchers();
  // How many watchers there are (a ListAndWatch stream has one until gRPC
  // reports it done).
  size_t watcher_count() const;
  // Marks the list closed for good and calls the watchers.
  void Close();
  bool closed() const;

 private:
  void Publish(std::vector<pluginapi::Device> devices)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  pluginapi::DeviceSnapshotPtr current_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Held while watchers run, so RemoveWatcher waits for a running one.
  // Acquired before mu_ is, never while mu_ is held.
  mutable absl::Mutex watchers_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::flat_hash_map<WatcherId, std::function<void()>> watchers_
      ABSL_GUARDED_BY(watchers_mu_);
  WatcherId next_watcher_ ABSL_GUARDED_BY(watchers_mu_) = 1;
};

}  // namespace gpulet::plugin
