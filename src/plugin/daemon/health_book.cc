#include "src/plugin/daemon/health_book.h"

#include <algorithm>
#include <set>

namespace gpulet::daemon {
namespace {

bool SameScope(const health::HealthEvent& a, const health::HealthEvent& b) {
  return a.gpu_instance_id == b.gpu_instance_id &&
         a.compute_instance_id == b.compute_instance_id;
}

// Whether an entry covers a device of its GPU: a whole-GPU entry covers all
// of them; a MIG entry covers the devices of its GPU instance (and compute
// instance, when it names one).
bool Covers(const health::HealthEvent& entry, const pluginapi::Device& d) {
  if (!entry.gpu_instance_id.has_value()) return true;
  if (d.gpu_instance_id != static_cast<int>(*entry.gpu_instance_id)) {
    return false;
  }
  return !entry.compute_instance_id.has_value() ||
         d.compute_instance_id == static_cast<int>(*entry.compute_instance_id);
}

}  // namespace

bool HealthBook::Record(const std::string& uuid,
                        const health::HealthEvent& event) {
  if (event.healthy) return entries_.erase(uuid) > 0;
  std::vector<health::HealthEvent>& list = entries_[uuid];
  for (const health::HealthEvent& e : list) {
    if (SameScope(e, event)) return false;
  }
  list.push_back(event);
  return true;
}

void HealthBook::Apply(const std::map<int, std::string>& uuid_of_gpu,
                       std::vector<pluginapi::Device>& devices) const {
  if (entries_.empty()) return;
  for (pluginapi::Device& d : devices) {
    auto uuid = uuid_of_gpu.find(d.gpu_index);
    if (uuid == uuid_of_gpu.end()) continue;
    auto entry = entries_.find(uuid->second);
    if (entry == entries_.end()) continue;
    for (const health::HealthEvent& e : entry->second) {
      if (Covers(e, d)) d.healthy = false;
    }
  }
}

void HealthBook::DropIf(
    const std::function<bool(const health::HealthEvent&)>& drop) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    std::erase_if(it->second, drop);
    it = it->second.empty() ? entries_.erase(it) : std::next(it);
  }
}

void HealthBook::DropCause(health::HealthCause cause) {
  DropIf([cause](const health::HealthEvent& e) { return e.cause == cause; });
}

void HealthBook::KeepOnly(health::HealthCause cause) {
  DropIf([cause](const health::HealthEvent& e) { return e.cause != cause; });
}

void HealthBook::Retain(const std::map<int, std::string>& uuid_of_gpu) {
  std::set<std::string> present;
  for (const auto& [index, uuid] : uuid_of_gpu) present.insert(uuid);
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = present.contains(it->first) ? std::next(it) : entries_.erase(it);
  }
}

}  // namespace gpulet::daemon
