#include "src/plugin/daemon/served_resources.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/logging.h"
#include "src/model/sharing/unit_id.h"

namespace gpulet::daemon {
namespace {

const std::map<std::string, resources::PassthroughHealth>& NoPassthrough() {
  static const auto* const none =
      new std::map<std::string, resources::PassthroughHealth>();
  return *none;
}

// "GPU 1 (GPU-...)", with the MIG instance when the event names one.
std::string EventSubject(const health::HealthEvent& event,
                         const std::string* uuid) {
  std::string gpu = absl::StrCat("GPU ", event.gpu_index, " (",
                                 uuid == nullptr ? "unknown" : *uuid, ")");
  if (event.gpu_instance_id.has_value()) {
    absl::StrAppend(&gpu, " MIG GI ", *event.gpu_instance_id, " CI ",
                    event.compute_instance_id.value_or(0));
  }
  return gpu;
}

void LogHealthEvent(const health::HealthEvent& event, const std::string* uuid,
                    int changed) {
  const std::string gpu = EventSubject(event, uuid);
  if (changed > 0 && event.healthy) {
    GPULET_LOG(INFO) << gpu << " recovered: " << event.reason << "; " << changed
                     << " device(s) marked healthy";
  } else if (changed > 0) {
    GPULET_LOG(WARNING) << gpu << " is unhealthy: " << event.reason << "; "
                        << changed << " device(s) marked unhealthy";
  } else {
    GPULET_VLOG(1) << gpu << " is " << (event.healthy ? "healthy" : "unhealthy")
                   << ": " << event.reason << " (no change)";
  }
}

}  // namespace

ServedResources::ServedResources(const metrics::GpuletMetrics* metrics,
                                 MemoryUnitsListener on_memory_units)
    : metrics_(metrics), on_memory_units_(std::move(on_memory_units)) {}

void ServedResources::RecordNode(const device::Node& node) {
  std::map<int, std::string> uuids;
  for (const device::Gpu& gpu : node.gpus) {
    if (!gpu.uuid.empty()) uuids[static_cast<int>(gpu.index)] = gpu.uuid;
    if (!gpu.failure.empty()) {
      GPULET_LOG(WARNING) << "GPU " << gpu.index << " ("
                          << (gpu.uuid.empty() ? "UUID unknown" : gpu.uuid)
                          << ") failed discovery: " << gpu.failure
                          << (gpu.uuid.empty()
                                  ? "; it cannot be advertised"
                                  : "; its devices are advertised Unhealthy");
    }
  }
  absl::MutexLock lock(&mu_);
  gpu_uuids_ = uuids;
  book_.Retain(uuids);
  book_.DropCause(health::HealthCause::kDiscoveryFailed);
  for (const device::Gpu& gpu : node.gpus) {
    if (gpu.failure.empty() || gpu.uuid.empty()) continue;
    health::HealthEvent failed;
    failed.gpu_index = static_cast<int>(gpu.index);
    failed.reason = absl::StrCat("discovery failed: ", gpu.failure);
    failed.cause = health::HealthCause::kDiscoveryFailed;
    book_.Record(gpu.uuid, failed);
  }
}

void ServedResources::KeepOnlyDiscoveryFailures() {
  absl::MutexLock lock(&mu_);
  book_.KeepOnly(health::HealthCause::kDiscoveryFailed);
}

HealthSources ServedResources::Sources(
    const std::map<std::string, resources::PassthroughHealth>& passthrough)
    const {
  return HealthSources{.gpu_uuids = gpu_uuids_,
                       .book = book_,
                       .mps_enabled = mps_enabled_,
                       .mps_up = mps_up_,
                       .mps_replicas = mps_replicas_,
                       .passthrough = passthrough};
}

void ServedResources::Serve(
    std::vector<PreparedResource> prepared,
    const pluginapi::PreferredHandler& preferred, const RunnerOptions& options,
    const std::map<std::string, resources::PassthroughHealth>& passthrough) {
  std::vector<Served> removed;
  std::vector<PluginRunner*> added;
  {
    absl::MutexLock lock(&mu_);
    const HealthSources sources = Sources(passthrough);
    std::set<std::string> wanted;
    for (PreparedResource& p : prepared) {
      wanted.insert(p.spec.resource_name);
      PluginRunner* runner =
          ServeOne(std::move(p), preferred, options, sources);
      if (runner != nullptr) added.push_back(runner);
    }
    for (auto it = served_.begin(); it != served_.end();) {
      const std::string& name = it->runner->resource_name();
      if (wanted.contains(name)) {
        ++it;
        continue;
      }
      metrics_->device_healthy->RemoveMatching("resource", name);
      removed.push_back(std::move(*it));
      it = served_.erase(it);
    }
    PublishDeviceHealth();
    PublishMemoryUnits();
  }
  for (const Served& s : removed) {
    GPULET_LOG(INFO) << "no longer serving " << s.runner->resource_name()
                     << ": the configuration no longer has it";
  }
  removed.clear();  // stops their servers and removes their sockets
  for (PluginRunner* runner : added) runner->Start();
}

PluginRunner* ServedResources::ServeOne(
    PreparedResource p, const pluginapi::PreferredHandler& preferred,
    const RunnerOptions& options, const HealthSources& sources) {
  p.spec.devices =
      ComposeDeviceHealth(std::move(p.spec.devices), p.role, sources);
  pluginapi::PreferredHandler chosen =
      p.preferred ? std::move(p.preferred) : preferred;
  auto it = std::find_if(served_.begin(), served_.end(), [&](const Served& s) {
    return s.runner->resource_name() == p.spec.resource_name;
  });
  if (it != served_.end()) {
    it->role = p.role;
    it->runner->Update(p.spec.devices, std::move(p.allocate), chosen);
    return nullptr;
  }
  const ResourceRole role = p.role;
  // Fixed for the runner's life: a resource keeps its role across reloads
  // (the memory-unit resource has a name of its own).
  RunnerOptions runner_options = options;
  runner_options.handlers_wait = role == ResourceRole::kMemoryUnits;
  served_.push_back(Served{
      std::make_unique<PluginRunner>(std::move(p.spec), runner_options,
                                     std::move(p.allocate), std::move(chosen)),
      role});
  return served_.back().runner.get();
}

std::vector<PluginRunner*> ServedResources::Runners() {
  absl::MutexLock lock(&mu_);
  std::vector<PluginRunner*> out;
  out.reserve(served_.size());
  for (const Served& s : served_) out.push_back(s.runner.get());
  return out;
}

void ServedResources::Clear() {
  std::vector<Served> stopped;
  {
    absl::MutexLock lock(&mu_);
    for (const Served& s : served_) {
      metrics_->device_healthy->RemoveMatching("resource",
                                               s.runner->resource_name());
    }
    stopped.swap(served_);
    gpu_uuids_.clear();
    book_.Clear();
    mps_enabled_ = false;
    mps_up_.clear();
    mps_replicas_.clear();
  }
  stopped.clear();
}

bool ServedResources::MigScoped(const health::HealthEvent& event) const {
  if (!event.gpu_instance_id.has_value()) return false;
  const int gi = static_cast<int>(*event.gpu_instance_id);
  bool scoped = false;
  for (const Served& s : served_) {
    for (const pluginapi::Device& d : s.runner->devices().Snapshot()->devices) {
      scoped |= d.gpu_index == event.gpu_index && d.gpu_instance_id == gi;
    }
  }
  return scoped;
}

// An event NVML attributes to one MIG instance changes only that MIG device
// (and its replicas); anything else, or a MIG event no advertised device
// matches (migStrategy none), changes every device of the GPU: the GPU
// itself, its replicas and its MIG devices. The book keeps the event for
// device lists a reload builds later.
void ServedResources::OnGpuHealth(const health::HealthEvent& event) {
  absl::MutexLock lock(&mu_);
  const bool mig_scoped = MigScoped(event);
  auto uuid = gpu_uuids_.find(event.gpu_index);
  const std::string* known = uuid == gpu_uuids_.end() ? nullptr : &uuid->second;
  if (known != nullptr) {
    health::HealthEvent recorded = event;
    if (!mig_scoped) {
      recorded.gpu_instance_id.reset();
      recorded.compute_instance_id.reset();
    }
    book_.Record(*known, recorded);
  }
  int changed = 0;
  for (const Served& s : served_) {
    plugin::DeviceList& devices = s.runner->devices();
    if (mig_scoped) {
      changed += devices.SetMigHealth(
          event.gpu_index, static_cast<int>(*event.gpu_instance_id),
          event.compute_instance_id.has_value()
              ? static_cast<int>(*event.compute_instance_id)
              : -1,
          event.healthy);
    } else if (mps_enabled_ && known != nullptr &&
               s.role == ResourceRole::kMemoryUnits) {
      // The book's health, then MPS's: a recovered GPU's memory units stay
      // down while its MPS daemon is.
      changed += Recompose(s, [&](const pluginapi::Device& d) {
        return MpsDaemonGpu(d, s.role) == *known;
      });
    } else if (!mps_replicas_.empty() && s.role == ResourceRole::kGpus) {
      // Likewise a recovered GPU's sharing.mps replicas.
      changed += Recompose(s, [&](const pluginapi::Device& d) {
        return d.gpu_index == event.gpu_index;
      });
    } else {
      changed += devices.SetGpuHealth(event.gpu_index, event.healthy);
    }
  }
  if (changed > 0) {
    PublishDeviceHealth(event.gpu_index);
    PublishMemoryUnits();
  }
  LogHealthEvent(event, known, changed);
}

void ServedResources::ResetMps(bool enabled) {
  absl::MutexLock lock(&mu_);
  mps_enabled_ = enabled;
  mps_up_.clear();
}

void ServedResources::SetMpsReplicas(std::set<std::string> gpus) {
  absl::MutexLock lock(&mu_);
  if (gpus == mps_replicas_) return;
  mps_replicas_ = std::move(gpus);
  if (ApplyMpsHealth() > 0) PublishDeviceHealth();
}

void ServedResources::OnMps(const std::string& uuid, bool up,
                            const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (up) {
    mps_up_.insert(uuid);
  } else {
    mps_up_.erase(uuid);
  }
  const int changed = ApplyMpsHealth(uuid);
  if (changed > 0) {
    PublishDeviceHealth();
    PublishMemoryUnits();
  }
  if (up) {
    GPULET_LOG(INFO) << "GPU " << uuid << ": MPS control daemon up; " << changed
                     << " device(s) marked healthy";
  } else {
    GPULET_LOG(WARNING) << "GPU " << uuid << ": MPS control daemon down ("
                        << reason << "); " << changed
                        << " device(s) marked unhealthy";
  }
}

int ServedResources::ApplyMpsHealth(const std::string& only_gpu) {
  int changed = 0;
  for (const Served& s : served_) {
    if (s.role == ResourceRole::kMemoryUnits && !mps_enabled_) continue;
    changed += Recompose(s, [&](const pluginapi::Device& d) {
      const std::string gpu = MpsDaemonGpu(d, s.role);
      return !gpu.empty() && (only_gpu.empty() || gpu == only_gpu);
    });
  }
  return changed;
}

int ServedResources::Recompose(
    const Served& s,
    const std::function<bool(const pluginapi::Device&)>& which) {
  std::vector<pluginapi::Device> devices;
  const pluginapi::DeviceSnapshotPtr snapshot = s.runner->devices().Snapshot();
  for (const pluginapi::Device& d : snapshot->devices) {
    if (!which(d)) continue;
    devices.push_back(d);
    devices.back().healthy = true;  // recomposed from the sources alone
  }
  if (devices.empty()) return 0;
  devices =
      ComposeDeviceHealth(std::move(devices), s.role, Sources(NoPassthrough()));
  int changed = 0;
  for (const pluginapi::Device& d : devices) {
    const pluginapi::Device* now = snapshot->Find(d.id);
    if (now != nullptr && now->healthy != d.healthy) {
      changed += s.runner->devices().SetHealth(d.id, d.healthy) ? 1 : 0;
    }
  }
  return changed;
}

void ServedResources::SetPassthroughHealth(const std::string& id,
                                           bool healthy) {
  absl::MutexLock lock(&mu_);
  for (const Served& s : served_) {
    if (s.role != ResourceRole::kPassthrough) continue;
    if (s.runner->devices().SetHealth(id, healthy)) {
      metrics_->device_healthy->Set({s.runner->resource_name(), id},
                                    metrics::HealthValue(healthy));
    }
  }
}

// Every advertised device's health as gpulet_device_healthy.
void ServedResources::PublishDeviceHealth(int gpu_index) {
  for (const Served& s : served_) {
    const std::string& resource = s.runner->resource_name();
    for (const pluginapi::Device& d : s.runner->devices().Snapshot()->devices) {
      if (gpu_index >= 0 && d.gpu_index != gpu_index) continue;
      metrics_->device_healthy->Set({resource, d.id},
                                    metrics::HealthValue(d.healthy));
    }
  }
}

void ServedResources::PublishMemoryUnits() {
  if (!on_memory_units_) return;
  for (const Served& s : served_) {
    if (s.role != ResourceRole::kMemoryUnits) continue;
    const pluginapi::DeviceSnapshotPtr units = s.runner->devices().Snapshot();
    on_memory_units_(units.get());
    return;
  }
  on_memory_units_(nullptr);
}

}  // namespace gpulet::daemon
