#include "src/dra/kubelet/device_health.h"

namespace gpulet::dra {

void DeviceHealthBoard::Set(const std::vector<DeviceHealth>& health) {
  // Held across the update and the calls, so listeners see changes in the
  // order they were made.
  absl::MutexLock listeners_lock(&listeners_mu_);
  std::vector<DeviceHealth> changed;
  {
    absl::MutexLock lock(&mu_);
    for (const DeviceHealth& h : health) {
      auto it = devices_.find(h.device);
      if (it != devices_.end() && it->second.healthy == h.healthy &&
          it->second.message == h.message && it->second.fault == h.fault) {
        continue;
      }
      devices_[h.device] = h;
      changed.push_back(h);
    }
    if (changed.empty()) return;
    ++version_;
  }
  for (const auto& [id, listener] : listeners_) listener(changed);
}

std::map<std::string, DeviceHealth> DeviceHealthBoard::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return devices_;
}

std::set<std::string> DeviceHealthBoard::Unhealthy() const {
  absl::MutexLock lock(&mu_);
  std::set<std::string> out;
  for (const auto& [name, h] : devices_) {
    if (!h.healthy) out.insert(name);
  }
  return out;
}

std::map<std::string, DeviceFault> DeviceHealthBoard::Faults() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, DeviceFault> out;
  for (const auto& [name, h] : devices_) {
    if (!h.healthy) out[name] = h.fault;
  }
  return out;
}

uint64_t DeviceHealthBoard::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

int DeviceHealthBoard::Subscribe(Listener listener) {
  absl::MutexLock lock(&listeners_mu_);
  listeners_[next_id_] = std::move(listener);
  return next_id_++;
}

void DeviceHealthBoard::Unsubscribe(int id) {
  absl::MutexLock lock(&listeners_mu_);
  listeners_.erase(id);
}

uint64_t DeviceHealthBoard::WaitForChange(uint64_t seen,
                                          absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_ || version_ > seen;
  };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  return version_;
}

void DeviceHealthBoard::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

bool DeviceHealthBoard::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

}  // namespace gpulet::dra
