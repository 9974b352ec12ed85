#include "src/plugin/server/device_list.h"

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
      std::equal(
          snapshot->devices.begin(), snapshot->devices.end(),
          current_->devices.begin(),
          [](const Device& a, const Device& b) { return a.id == b.id; })) {
    snapshot->index = current_->index;
  } else {
    snapshot->BuildIndex();
  }
  current_ = std::move(snapshot);
}

void DeviceList::Replace(std::vector<Device> devices) {
  {
    absl::MutexLock lock(&mu_);
    if (devices == current_->devices) return;
    Publish(std::move(devices));
  }
  NotifyWatchers();
}

int DeviceList::SetGpuHealth(int gpu_index, bool healthy) {
  int changed = 0;
  {
    absl::MutexLock lock(&mu_);
    std::vector<Device> devices = current_->devices;
    for (Device& d : devices) {
      if (d.gpu_index == gpu_index && d.healthy != healthy) {
        d.healthy = healthy;
        ++changed;
      }
    }
    if (changed == 0) return 0;
    Publish(std::move(devices));
  }
  NotifyWatchers();
  return changed;
}

int DeviceList::SetMigHealth(int gpu_index, int gpu_instance_id,
                             int compute_instance_id, bool healthy) {
  if (gpu_instance_id < 0) return 0;
  int changed = 0;
  {
    absl::MutexLock lock(&mu_);
    std::vector<Device> devices = current_->devices;
    for (Device& d : devices) {
      const bool match = d.gpu_index == gpu_index &&
                         d.gpu_instance_id == gpu_instance_id &&
                         (compute_instance_id < 0 ||
                          d.compute_instance_id == compute_instance_id);
      if (match && d.healthy != healthy) {
        d.healthy = healthy;
        ++changed;
      }
    }
    if (changed == 0) return 0;
    Publish(std::move(devices));
  }
  NotifyWatchers();
  return changed;
}

bool DeviceList::SetHealth(const std::string& id, bool healthy) {
  {
    absl::MutexLock lock(&mu_);
    const Device* found = current_->Find(id);
    if (found == nullptr) return false;
    if (found->healthy == healthy) return true;
    std::vector<Device> devices = current_->devices;
    for (Device& d : devices) {
      if (d.id == id) d.healthy = healthy;
    }
    Publish(std::move(devices));
  }
  NotifyWatchers();
  return true;
}

DeviceList::WatcherId DeviceList::AddWatcher(std::function<void()> on_change) {
  absl::MutexLock lock(&watchers_mu_);
  const WatcherId id = next_watcher_++;
  watchers_.emplace(id, std::move(on_change));
  return id;
}

void DeviceList::RemoveWatcher(WatcherId id) {
  absl::MutexLock lock(&watchers_mu_);
  watchers_.erase(id);
}

void DeviceList::NotifyWatchers() {
  absl::MutexLock lock(&watchers_mu_);
  for (const auto& [id, on_change] : watchers_) on_change();
}

size_t DeviceList::watcher_count() const {
  absl::MutexLock lock(&watchers_mu_);
  return watchers_.size();
}

void DeviceList::Close() {
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  NotifyWatchers();
}

bool DeviceList::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

}  // namespace gpulet::plugin
