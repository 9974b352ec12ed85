// DeviceList: the devices one resource advertises to the kubelet
// (pluginapi::Device), with their health, versioned so ListAndWatch streams
// can wait for the next change.
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
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/pluginapi/device.h"

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

  // Blocks until the version differs from `seen`, Close() was called,
  // `*interrupt` (if given) is true, or the timeout passed. Returns the
  // current snapshot in every case.
  //
  // `interrupt` lets one reader group (a PluginServer being stopped) wake its
  // own waiters without closing a list other servers share: set the flag,
  // then call WakeWaiters().
  pluginapi::DeviceSnapshotPtr WaitForChange(
      uint64_t seen, absl::Duration timeout,
      const std::atomic<bool>* interrupt = nullptr) const;
  // Makes every waiter re-check its wake-up condition (see `interrupt`).
  void WakeWaiters() const;
  // Wakes every waiter for good; later WaitForChange calls return at once.
  void Close();
  bool closed() const;

 private:
  void Publish(std::vector<pluginapi::Device> devices)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  pluginapi::DeviceSnapshotPtr current_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gpulet::plugin
