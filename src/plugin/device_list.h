// DeviceList: the devices one resource advertises to the kubelet, with their
// health, versioned so ListAndWatch streams can wait for the next change.
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
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gpulet::plugin {

struct Device {
  std::string id;  // the ID the kubelet sees (<= 63 chars)
  bool healthy = true;
  std::vector<int64_t> numa_nodes;  // empty: no NUMA affinity reported
  // What the container runtime is told for this device (NVIDIA_VISIBLE_DEVICES
  // entry): the GPU or MIG UUID, or its index, without any replica suffix.
  std::string visible_id;
  int gpu_index = -1;  // parent GPU (of a replica or MIG device), for
                       // health fan-out and topology
  // A MIG device's GPU instance and compute instance IDs; -1 for a full GPU
  // (or a replica of one). A MIG-scoped health event affects only the
  // devices with the same gpu_index, gpu_instance_id and compute_instance_id.
  int gpu_instance_id = -1;
  int compute_instance_id = -1;
  // Which replica of the underlying GPU or MIG device this is (time-slicing,
  // MPS): 0..replicas-1; -1 when the device is not shared.
  int replica = -1;
  // Device nodes only this device needs, as container paths without the dev
  // root: "/dev/nvidia3" for a GPU; for a MIG device also its GPU-instance and
  // compute-instance access nodes "/dev/nvidia-caps/nvidia-cap<N>". Control
  // nodes (nvidiactl, nvidia-uvm, ...) are per node, not listed here.
  std::vector<std::string> device_nodes = {};

  friend bool operator==(const Device&, const Device&) = default;
};

struct DeviceSnapshot {
  uint64_t version = 0;
  std::vector<Device> devices;
  // ID -> position in `devices`, built by BuildIndex (DeviceList does for
  // every snapshot it publishes); empty: Find scans. A snapshot whose
  // devices change after BuildIndex must call it again.
  // Shared between snapshots that only differ in health.
  std::shared_ptr<const absl::flat_hash_map<std::string, size_t>> index =
      nullptr;

  // The device with this ID, or null. O(1) with an index, O(n) without.
  const Device* Find(const std::string& id) const;
  void BuildIndex();
};
using DeviceSnapshotPtr = std::shared_ptr<const DeviceSnapshot>;

class DeviceList {
 public:
  explicit DeviceList(std::vector<Device> devices = {});

  DeviceSnapshotPtr Snapshot() const;

  // Replaces every device. Bumps the version only if something changed.
  void Replace(std::vector<Device> devices);
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
  void Publish(std::vector<Device> devices) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  DeviceSnapshotPtr current_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Held while watchers run, so RemoveWatcher waits for a running one.
  // Acquired before mu_ is, never while mu_ is held.
  mutable absl::Mutex watchers_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::flat_hash_map<WatcherId, std::function<void()>> watchers_
      ABSL_GUARDED_BY(watchers_mu_);
  WatcherId next_watcher_ ABSL_GUARDED_BY(watchers_mu_) = 1;
};

}  // namespace gpulet::plugin
