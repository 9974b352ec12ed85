#include "src/plugin/device_list.h"

#include <algorithm>
#include <utility>

namespace gpulet::plugin {

using pluginapi::Device;
using pluginapi::DeviceSnapshot;
using pluginapi::DeviceSnapshotPtr;

DeviceList::DeviceList(std::vector<Device> devices) {
  auto snapshot = std::make_shared<DeviceSnapshot>();
  snapshot->version = 1;
  snapshot->devices = std::move(devices);
  snapshot->BuildIndex();
  absl::MutexLock lock(&mu_);
  current_ = std::move(snapshot);
}

DeviceSnapshotPtr DeviceList::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

void DeviceList::Publish(std::vector<Device> devices) {
  auto snapshot = std::make_shared<DeviceSnapshot>();
  snapshot->version = current_->version + 1;
  snapshot->devices = std::move(devices);
  // Health flips keep the IDs: reuse the index instead of rebuilding it.
  if (snapshot->devices.size() == current_->devices.size() &&
      std::equal(snapshot->devices.begin(), snapshot->devices.end(),
                 current_->devices.begin(),
                 [](const Device& a, const Device& b) { return a.id == b.id; })) {
    snapshot->index = current_->index;
  } else {
    snapshot->BuildIndex();
  }
  // Waiters are woken by the Unlock that follows: absl::Mutex re-evaluates
  // their conditions then.
  current_ = std::move(snapshot);
}

void DeviceList::Replace(std::vector<Device> devices) {
  absl::MutexLock lock(&mu_);
  if (devices == current_->devices) return;
  Publish(std::move(devices));
}

int DeviceList::SetGpuHealth(int gpu_index, bool healthy) {
  absl::MutexLock lock(&mu_);
  std::vector<Device> devices = current_->devices;
  int changed = 0;
  for (Device& d : devices) {
    if (d.gpu_index == gpu_index && d.healthy != healthy) {
      d.healthy = healthy;
      ++changed;
    }
  }
  if (changed > 0) Publish(std::move(devices));
  return changed;
}

int DeviceList::SetMigHealth(int gpu_index, int gpu_instance_id,
                             int compute_instance_id, bool healthy) {
  if (gpu_instance_id < 0) return 0;
  absl::MutexLock lock(&mu_);
  std::vector<Device> devices = current_->devices;
  int changed = 0;
  for (Device& d : devices) {
    const bool match =
        d.gpu_index == gpu_index && d.gpu_instance_id == gpu_instance_id &&
        (compute_instance_id < 0 ||
         d.compute_instance_id == compute_instance_id);
    if (match && d.healthy != healthy) {
      d.healthy = healthy;
      ++changed;
    }
  }
  if (changed > 0) Publish(std::move(devices));
  return changed;
}

bool DeviceList::SetHealth(const std::string& id, bool healthy) {
  absl::MutexLock lock(&mu_);
  const Device* found = current_->Find(id);
  if (found == nullptr) return false;
  if (found->healthy == healthy) return true;
  std::vector<Device> devices = current_->devices;
  for (Device& d : devices) {
    if (d.id == id) d.healthy = healthy;
  }
  Publish(std::move(devices));
  return true;
}

DeviceSnapshotPtr DeviceList::WaitForChange(
    uint64_t seen, absl::Duration timeout,
    const std::atomic<bool>* interrupt) const {
  absl::MutexLock lock(&mu_);
  auto done = [this, seen, interrupt]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_ || current_->version != seen ||
           (interrupt != nullptr && interrupt->load());
  };
  mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
  return current_;
}

void DeviceList::WakeWaiters() const {
  // Releasing the mutex makes absl re-evaluate every waiter's condition,
  // which is how a flag set outside the lock is noticed.
  absl::MutexLock lock(&mu_);
}

void DeviceList::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

bool DeviceList::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

}  // namespace gpulet::plugin
