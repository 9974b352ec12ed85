// HealthBook: the daemon's record of which GPUs and MIG instances are
// unhealthy, kept across configuration reloads so that device lists built
// for a new configuration start with the health the old ones had.
//
// Entries are keyed by GPU UUID (stable across re-discovery) and hold the
// HealthEvent that made the GPU (or one MIG instance of it) unhealthy. A
// healthy event for a GPU (recovery) clears every entry of that GPU.
//
// Thread safety: none; the daemon guards it with its own mutex.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "src/gpu/health/xid_policy.h"
#include "src/plugin/server/device_list.h"

namespace gpulet::daemon {

class HealthBook {
 public:
  // Records `event` for the GPU with UUID `uuid`. Returns true when the
  // book changed.
  bool Record(const std::string& uuid, const health::HealthEvent& event);
  // Marks unhealthy every device whose GPU (looked up in `uuid_of_gpu`, by
  // NVML index) or MIG instance has an entry. Never marks anything healthy:
  // a device unhealthy for another reason (discovery) stays so.
  void Apply(const std::map<int, std::string>& uuid_of_gpu,
             std::vector<pluginapi::Device>& devices) const;
  // Drops the entries of GPUs not in `uuid_of_gpu` (gone from the node).
  void Retain(const std::map<int, std::string>& uuid_of_gpu);
  // Drops every entry made for `cause` (a new discovery replaces the
  // previous one's failures).
  void DropCause(health::HealthCause cause);
  // Drops every entry not made for `cause` (the monitor's entries, when
  // health checks are turned off and nothing could bring them back).
  void KeepOnly(health::HealthCause cause);
  void Clear() { entries_.clear(); }
  bool empty() const { return entries_.empty(); }

 private:
  void DropIf(const std::function<bool(const health::HealthEvent&)>& drop);

  std::map<std::string, std::vector<health::HealthEvent>> entries_;
};

}  // namespace gpulet::daemon
