#include "src/plugin/daemon/passthrough_gpus.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/base/common/logging.h"
#include "src/model/allocation/simple_preferred.h"

namespace gpulet::daemon {
namespace {

// The watcher's settings: a new one is needed when they change.
std::string WatcherKey(const config::Passthrough& pt) {
  return absl::StrCat(
      pt.sys_root, "\n", pt.dev_root, "\n",
      pt.resync_period ? absl::FormatDuration(*pt.resync_period) : "-", "\n",
      pt.uevent_socket);
}

}  // namespace

PassthroughGpus::PassthroughGpus(std::string socket_prefix,
                                 const metrics::GpuletMetrics* metrics,
                                 ServedResources& served,
                                 std::function<void()> request_replan)
    : socket_prefix_(std::move(socket_prefix)),
      metrics_(metrics),
      served_(served),
      request_replan_(std::move(request_replan)) {}

PassthroughGpus::~PassthroughGpus() { StopWatcher(); }

PassthroughGpus::Planned PassthroughGpus::Prepare(
    const config::Config& config) {
  Planned out;
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
  out.plan = resources::PlanPassthrough(*inventory, pt, socket_prefix_, keep_);
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
      OnVanished(address, reason);
    };
    out.prepared.push_back(PreparedResource{
        spec, resources::MakePassthroughAllocate(std::move(allocate)),
        pluginapi::PreferredHandler(allocation::SimplePreferred),
        ResourceRole::kPassthrough});
  }
  return out;
}

void PassthroughGpus::Record(const resources::PassthroughPlan& plan) {
  absl::MutexLock lock(&mu_);
  for (const auto& [address, health] : health_) {
    if (!plan.health.contains(address) && !mdevs_.contains(address)) {
      metrics_->passthrough_viable->Remove({address});
    }
  }
  health_.clear();
  mdevs_ = plan.mdev_ids;
  selected_ = plan.selected;
  for (const auto& [address, health] : plan.health) {
    SetHealth(address, health);
  }
}

std::map<std::string, resources::PassthroughHealth> PassthroughGpus::Health()
    const {
  absl::MutexLock lock(&mu_);
  return health_;
}

void PassthroughGpus::EnsureWatcher(const config::Config& config) {
  std::string key;
  if (config.passthrough) {
    key = WatcherKey(*config.passthrough);
    absl::MutexLock lock(&mu_);
    config_ = *config.passthrough;
  }
  if (key == watcher_key_) return;
  StopWatcher();
  watcher_key_ = key;
  if (!config.passthrough) return;
  const config::Passthrough& pt = *config.passthrough;
  {
    absl::MutexLock lock(&mu_);
    roots_ = resources::RootsOf(pt);
  }
  absl::StatusOr<std::unique_ptr<health::PassthroughWatcher>> watcher =
      health::PassthroughWatcher::Start(
          resources::RootsOf(pt), pt.resync_period,
          [this](const absl::StatusOr<vfio::Inventory>& inventory) {
            OnInventory(inventory);
          },
          pt.uevent_socket);
  if (!watcher.ok()) {
    GPULET_LOG(ERROR) << "passthrough GPUs' health is not watched: "
                      << watcher.status().message();
    return;
  }
  absl::MutexLock lock(&mu_);
  watcher_ = *std::move(watcher);
}

void PassthroughGpus::Stop() {
  StopWatcher();
  watcher_key_.clear();
  absl::MutexLock lock(&mu_);
  health_.clear();
  mdevs_.clear();
  selected_.clear();
  replan_ = false;
}

// The watcher's thread takes mu_, so it is joined outside it.
void PassthroughGpus::StopWatcher() {
  std::unique_ptr<health::PassthroughWatcher> old;
  {
    absl::MutexLock lock(&mu_);
    old = std::move(watcher_);
  }
  old.reset();
}

bool PassthroughGpus::BeginReplan() {
  absl::MutexLock lock(&mu_);
  if (!replan_) return false;
  replan_ = false;
  keep_ = selected_;
  return true;
}

void PassthroughGpus::EndReplan() { keep_.clear(); }

void PassthroughGpus::OnInventory(
    const absl::StatusOr<vfio::Inventory>& inventory) {
  absl::MutexLock lock(&mu_);
  if (!inventory.ok()) {
    GPULET_LOG(WARNING) << "passthrough health not re-checked: "
                        << inventory.status().message();
    return;
  }
  std::vector<std::pair<std::string, resources::PassthroughHealth>> fresh;
  for (const auto& [id, old] : health_) {
    fresh.emplace_back(
        id, resources::RecheckPassthroughHealth(id, *inventory, roots_));
  }
  for (const auto& [address, health] : fresh) {
    SetHealth(address, health);
  }
  if (replan_) return;
  AskReplanIfNeeded(*inventory);
}

// What a plan made now would take out of the container resources (a GPU
// bound to vfio-pci since) or add (an mdev created since). A GPU leaving
// vfio-pci asks for nothing: kept, it is Unhealthy.
void PassthroughGpus::AskReplanIfNeeded(const vfio::Inventory& inventory) {
  const resources::PassthroughPlan now =
      resources::PlanPassthrough(inventory, config_, socket_prefix_, selected_);
  for (const std::string& address : now.selected) {
    if (selected_.contains(address)) continue;
    std::string why = "now carries mediated devices";
    for (const vfio::Gpu& gpu : inventory.gpus) {
      if (gpu.function.address == address &&
          gpu.function.driver == "vfio-pci") {
        why = "is now bound to vfio-pci";
      }
    }
    GPULET_LOG(INFO) << "GPU " << address << " " << why
                     << ": it leaves the container resources";
    replan_ = true;
  }
  for (const std::string& uuid : now.mdev_ids) {
    if (mdevs_.contains(uuid)) continue;
    GPULET_LOG(INFO) << "mediated device " << uuid << " appeared";
    replan_ = true;
  }
  if (replan_) request_replan_();
}

void PassthroughGpus::OnVanished(const std::string& address,
                                 const std::string& reason) {
  absl::MutexLock lock(&mu_);
  SetHealth(address, {false, reason});
  // The watcher confirms (or brings it back) from sysfs.
  if (watcher_ != nullptr) watcher_->Recheck();
}

// Logs a change once, not every resync.
void PassthroughGpus::SetHealth(const std::string& address,
                                const resources::PassthroughHealth& health) {
  auto [it, added] = health_.try_emplace(address, health);
  const bool changed = !added && !(it->second == health);
  it->second = health;
  const bool mdev = mdevs_.contains(address);
  // The metric is about IOMMU groups of GPUs; an mdev's health is in
  // gpulet_device_healthy.
  if (!mdev) {
    metrics_->passthrough_viable->Set({address},
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
  served_.SetPassthroughHealth(address, health.healthy);
  if (health.healthy) {
    GPULET_LOG(INFO) << what << address << " is healthy again";
  } else {
    GPULET_LOG(WARNING) << what << address
                        << " is unhealthy: " << health.reason;
  }
}

}  // namespace gpulet::daemon
