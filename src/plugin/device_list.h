// DeviceList: the devices one resource advertises to the kubelet, with their
// health, versioned so ListAndWatch streams can wait for the next change.
//
// Writers (discovery on start and reload, the health monitor) replace the list
// or flip a device's health; readers take an immutable snapshot. Every real
// change (any field of any device, or the set of devices) bumps the version
// by one and wakes waiters; a no-op write does neither. The first version is 1.
//
// Thread safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
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

  // Blocks until the version differs from `seen`, Close() was called,
  // `*interrupt` (if given) is true, or the timeout passed. Returns the
  // current snapshot in every case.
  //
  // `interrupt` lets one reader group (a PluginServer being stopped) wake its
  // own waiters without closing a list other servers share: set the flag,
  // then call WakeWaiters().
  DeviceSnapshotPtr WaitForChange(
      uint64_t seen, absl::Duration timeout,
      const std::atomic<bool>* interrupt = nullptr) const;
  // Makes every waiter re-check its wake-up condition (see `interrupt`).
  void WakeWaiters() const;
  // Wakes every waiter for good; later WaitForChange calls return at once.
  void Close();
  bool closed() const;

 private:
  void Publish(std::vector<Device> devices) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  DeviceSnapshotPtr current_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gpulet::plugin
