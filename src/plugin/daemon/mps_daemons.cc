// Daemon::Impl, MPS for memory shares: one control daemon per GPU sharing
// memory (mps::Supervisor), and the health of those GPUs' memory units
// following their daemon (see daemon_impl.h and docs/sharing.md).
//
// A memory unit is advertised Healthy only while its GPU's daemon is up: a
// CUDA client that finds no control daemon runs without MPS, so without
// the limit its Allocate answer promised.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/model/cdi/driver.h"
#include "src/base/common/logging.h"
#include "src/plugin/daemon/daemon_impl.h"
#include "src/model/resources/resource_handlers.h"
#include "src/model/sharing/unit_id.h"

namespace gpulet::daemon {
namespace {

constexpr char kMpsControl[] = "nvidia-cuda-mps-control";

// The GPUs (UUIDs) of a memory-unit resource's devices.
std::vector<std::string> UnitGpus(const std::vector<pluginapi::Device>& devs) {
  std::set<std::string> uuids;
  std::string uuid;
  int64_t k = 0;
  for (const pluginapi::Device& d : devs) {
    if (sharing::ParseMemoryUnitId(d.id, &uuid, &k)) uuids.insert(uuid);
  }
  return {uuids.begin(), uuids.end()};
}

}  // namespace

void Daemon::Impl::EnsureMps(const config::Config& config,
                             const std::vector<Prepared>& prepared) {
  const bool wanted =
      config.sharing.memory.has_value() && config.sharing.memory->mps;
  if (!wanted) {
    mps_.reset();  // tells every daemon to quit
    mps_key_.clear();
    absl::MutexLock lock(&mu_);
    mps_enabled_ = false;
    mps_up_.clear();
    return;
  }
  std::vector<std::string> gpus;
  for (const Prepared& p : prepared) {
    if (p.spec.resource_name == config.sharing.memory->resource_name) {
      gpus = UnitGpus(p.spec.devices);
    }
  }
  const std::string root = resources::MakeHostView(config).driver_root;
  absl::StatusOr<std::string> binary = cdi::FindDriverBinary(root, kMpsControl);
  const std::string key =
      absl::StrCat(binary.ok() ? *binary : "", "|", config.flags.mps_root);
  if (mps_ == nullptr || key != mps_key_) {
    mps_.reset();
    {
      absl::MutexLock lock(&mu_);
      mps_enabled_ = true;
      mps_up_.clear();
    }
    mps_key_ = key;
    if (!binary.ok()) {
      GPULET_LOG(ERROR) << "memory shares with MPS: "
                        << binary.status().message()
                        << "; the memory units stay Unhealthy";
      return;
    }
    mps::SupervisorOptions o;
    o.binary = *binary;
    o.mps_root = config.flags.mps_root;
    o.registry = &registry_;
    o.on_change = [this](const std::string& uuid, bool up,
                         const std::string& reason) {
      OnMps(uuid, up, reason);
    };
    absl::StatusOr<std::unique_ptr<mps::Supervisor>> s =
        mps::Supervisor::Create(std::move(o));
    if (!s.ok()) {
      GPULET_LOG(ERROR) << "memory shares with MPS: " << s.status().message()
                        << "; the memory units stay Unhealthy";
      return;
    }
    mps_ = *std::move(s);
  }
  mps_->SetGpus(gpus);
}

void Daemon::Impl::MarkMpsDown(std::vector<pluginapi::Device>& devices) {
  if (!mps_enabled_) return;
  std::string uuid;
  int64_t k = 0;
  for (pluginapi::Device& d : devices) {
    if (sharing::ParseMemoryUnitId(d.id, &uuid, &k) &&
        !mps_up_.contains(uuid)) {
      d.healthy = false;
    }
  }
}

int Daemon::Impl::ApplyMpsHealth(const std::string& only_gpu) {
  if (!mps_enabled_) return 0;
  int changed = 0;
  for (auto& runner : runners_) {
    if (runner->resource_name() != memory_resource_) continue;
    std::vector<pluginapi::Device> devices;
    std::string uuid;
    int64_t k = 0;
    const pluginapi::DeviceSnapshotPtr snapshot = runner->devices().Snapshot();
    for (const pluginapi::Device& d : snapshot->devices) {
      if (!sharing::ParseMemoryUnitId(d.id, &uuid, &k)) continue;
      if (!only_gpu.empty() && uuid != only_gpu) continue;
      devices.push_back(d);
      devices.back().healthy = true;
    }
    // What the unit's health would be without MPS, then MPS's say.
    book_.Apply(gpu_uuids_, devices);
    MarkMpsDown(devices);
    for (const pluginapi::Device& d : devices) {
      const pluginapi::Device* now = snapshot->Find(d.id);
      if (now != nullptr && now->healthy != d.healthy) {
        changed += runner->devices().SetHealth(d.id, d.healthy) ? 1 : 0;
      }
    }
  }
  return changed;
}

void Daemon::Impl::OnMps(const std::string& uuid, bool up,
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
    PublishMemoryGpus();
  }
  if (up) {
    GPULET_LOG(INFO) << "GPU " << uuid << ": MPS control daemon up; "
                     << changed << " memory unit(s) marked healthy";
  } else {
    GPULET_LOG(WARNING) << "GPU " << uuid << ": MPS control daemon down ("
                        << reason << "); " << changed
                        << " memory unit(s) marked unhealthy";
  }
}

}  // namespace gpulet::daemon
