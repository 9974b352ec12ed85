// Daemon::Impl, passthrough GPUs: their resources from sysfs and the
// configuration, Allocate over the group nodes, and their health from the
// watcher and from Allocate (see daemon_impl.h, docs/passthrough.md).
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/model/allocation/simple_preferred.h"
#include "src/base/common/logging.h"
#include "src/plugin/daemon/daemon_impl.h"

namespace gpulet::daemon {

Daemon::Impl::PassthroughPrepared Daemon::Impl::PreparePassthrough(
    const config::Config& config) {
  PassthroughPrepared out;
  if (!config.passthrough) return out;
  const config::Passthrough& pt = *config.passthrough;
  absl::StatusOr<vfio::Inventory> inventory =
      vfio::Discover(resources::RootsOf(pt));
  if (!inventory.ok()) {
    GPULET_LOG(ERROR) << "passthrough GPUs are not served: cannot read "
                         "sysfs: "
                      << inventory.status().message();
    return out;
  }
  out.plan = resources::PlanPassthrough(*inventory, pt, options_.socket_prefix,
                                       passthrough_keep_);
  for (const std::string& error : out.plan.errors) {
    GPULET_LOG(ERROR) << error;
  }
  for (const resources::ResourceSpec& spec : out.plan.resources) {
    resources::PassthroughAllocateOptions allocate;
    allocate.resource_name = spec.resource_name;
    allocate.dev_root = pt.dev_root;
    allocate.host_dev_root =
        pt.host_dev_root.empty() ? pt.dev_root : pt.host_dev_root;
    allocate.mdev = out.plan.mdev_resources.contains(spec.resource_name);
    // An mdev is opened through its group; iommufd cdevs are the GPUs'.
    allocate.iommufd = inventory->iommufd && !allocate.mdev;
    allocate.on_vanished = [this](const std::string& address,
                                  const std::string& reason) {
      OnPassthroughVanished(address, reason);
    };
    out.prepared.push_back(Prepared{
        spec, resources::MakePassthroughAllocate(std::move(allocate)),
        pluginapi::PreferredHandler(allocation::SimplePreferred)});
  }
  return out;
}

void Daemon::Impl::RecordPassthrough(const resources::PassthroughPlan& plan) {
  absl::MutexLock lock(&mu_);
  passthrough_resources_.clear();
  for (const resources::ResourceSpec& spec : plan.resources) {
    passthrough_resources_.insert(spec.resource_name);
  }
  for (const auto& [address, health] : passthrough_health_) {
    if (!plan.health.contains(address) &&
        !passthrough_mdevs_.contains(address)) {
      metrics_.passthrough_viable->Remove({address});
    }
  }
  passthrough_health_.clear();
  passthrough_mdevs_ = plan.mdev_ids;
  passthrough_selected_ = plan.selected;
  for (const auto& [address, health] : plan.health) {
    SetPassthroughHealth(address, health);
  }
}

void Daemon::Impl::EnsurePassthroughWatcher(const config::Config& config) {
  std::string key;
  if (config.passthrough) {
    const config::Passthrough& pt = *config.passthrough;
    key = absl::StrCat(pt.sys_root, "\n", pt.dev_root, "\n",
                       pt.resync_period
                           ? absl::FormatDuration(*pt.resync_period)
                           : "-",
                       "\n",
                       pt.uevent_socket);
    absl::MutexLock lock(&mu_);
    passthrough_config_ = pt;
  }
  if (key == passthrough_watcher_key_) return;
  StopPassthroughWatcher();
  passthrough_watcher_key_ = key;
  if (!config.passthrough) return;
  const config::Passthrough& pt = *config.passthrough;
  {
    absl::MutexLock lock(&mu_);
    passthrough_roots_ = resources::RootsOf(pt);
  }
  absl::StatusOr<std::unique_ptr<health::PassthroughWatcher>> watcher =
      health::PassthroughWatcher::Start(
          resources::RootsOf(pt), pt.resync_period,
          [this](const absl::StatusOr<vfio::Inventory>& inventory) {
            OnPassthroughInventory(inventory);
          },
          pt.uevent_socket);
  if (!watcher.ok()) {
    GPULET_LOG(ERROR) << "passthrough GPUs' health is not watched: "
                      << watcher.status().message();
    return;
  }
  absl::MutexLock lock(&mu_);
  passthrough_watcher_ = *std::move(watcher);
}

// The watcher's thread takes mu_, so it is joined outside it.
void Daemon::Impl::StopPassthroughWatcher() {
  std::unique_ptr<health::PassthroughWatcher> old;
  {
    absl::MutexLock lock(&mu_);
    old = std::move(passthrough_watcher_);
  }
  old.reset();
}

void Daemon::Impl::OnPassthroughInventory(
    const absl::StatusOr<vfio::Inventory>& inventory) {
  absl::MutexLock lock(&mu_);
  if (!inventory.ok()) {
    GPULET_LOG(WARNING) << "passthrough health not re-checked: "
                        << inventory.status().message();
    return;
  }
  std::vector<std::pair<std::string, resources::PassthroughHealth>> fresh;
  for (const auto& [id, old] : passthrough_health_) {
    fresh.emplace_back(id, resources::RecheckPassthroughHealth(
                               id, *inventory, passthrough_roots_));
  }
  for (const auto& [address, health] : fresh) {
    SetPassthroughHealth(address, health);
  }
  if (passthrough_replan_) return;
  // What a plan made now would take out of the container resources (a GPU
  // bound to vfio-pci since) or add (an mdev created since). A GPU leaving
  // vfio-pci asks for nothing: kept, it is Unhealthy above.
  const resources::PassthroughPlan now = resources::PlanPassthrough(
      *inventory, passthrough_config_, options_.socket_prefix,
      passthrough_selected_);
  for (const std::string& address : now.selected) {
    if (passthrough_selected_.contains(address)) continue;
    std::string why = "now carries mediated devices";
    for (const vfio::Gpu& gpu : inventory->gpus) {
      if (gpu.function.address == address &&
          gpu.function.driver == "vfio-pci") {
        why = "is now bound to vfio-pci";
      }
    }
    GPULET_LOG(INFO) << "GPU " << address << " " << why
                     << ": it leaves the container resources";
    passthrough_replan_ = true;
  }
  for (const std::string& uuid : now.mdev_ids) {
    if (passthrough_mdevs_.contains(uuid)) continue;
    GPULET_LOG(INFO) << "mediated device " << uuid << " appeared";
    passthrough_replan_ = true;
  }
  if (passthrough_replan_) {
    const uint64_t one = 1;
    (void)!::write(wake_.get(), &one, sizeof(one));
  }
}

void Daemon::Impl::ReplanPassthrough() {
  {
    absl::MutexLock lock(&mu_);
    passthrough_replan_ = false;
    passthrough_keep_ = passthrough_selected_;
  }
  const config::Config config = config_;
  const device::Node node = node_;
  absl::Status s = Apply(config, health_, node);
  passthrough_keep_.clear();
  if (!s.ok()) {
    GPULET_LOG(ERROR) << "passthrough: the resources were not planned again "
                         "after a binding change: "
                      << s.message();
  }
}

void Daemon::Impl::OnPassthroughVanished(const std::string& address,
                                         const std::string& reason) {
  absl::MutexLock lock(&mu_);
  SetPassthroughHealth(address, {false, reason});
  // The watcher confirms (or brings it back) from sysfs.
  if (passthrough_watcher_ != nullptr) passthrough_watcher_->Recheck();
}

// Logs a change once, not every resync.
void Daemon::Impl::SetPassthroughHealth(
    const std::string& address, const resources::PassthroughHealth& health) {
  auto [it, added] = passthrough_health_.try_emplace(address, health);
  const bool changed = !added && !(it->second == health);
  it->second = health;
  const bool mdev = passthrough_mdevs_.contains(address);
  // The metric is about IOMMU groups of GPUs; an mdev's health is in
  // gpulet_device_healthy.
  if (!mdev) {
    metrics_.passthrough_viable->Set({address},
                                     metrics::HealthValue(health.healthy));
  }
  const char* what = mdev ? "mediated device " : "passthrough GPU ";
  if (added) {
    if (!health.healthy) {
      GPULET_LOG(WARNING) << what << address
                          << " is advertised Unhealthy: " << health.reason;
    }
    return;
  }
  if (!changed) return;
  for (auto& runner : runners_) {
    if (!passthrough_resources_.contains(runner->resource_name())) continue;
    if (runner->devices().SetHealth(address, health.healthy)) {
      metrics_.device_healthy->Set({runner->resource_name(), address},
                                   metrics::HealthValue(health.healthy));
    }
  }
  if (health.healthy) {
    GPULET_LOG(INFO) << what << address << " is healthy again";
  } else {
    GPULET_LOG(WARNING) << what << address << " is unhealthy: "
                        << health.reason;
  }
}

}  // namespace gpulet::daemon
