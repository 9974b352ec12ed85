#include "src/plugin/daemon/memory_shares.h"

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/common/logging.h"
#include "src/model/pluginapi/call_scope.h"
#include "src/model/resources/memory_handlers.h"
#include "src/model/sharing/unit_id.h"

namespace gpulet::daemon {
namespace {

sharing::Policy PolicyOf(config::MemoryPolicy policy) {
  return policy == config::MemoryPolicy::kSpread ? sharing::Policy::kSpread
                                                 : sharing::Policy::kBinpack;
}

// The GPUs of a memory-unit device list: units counted, unhealthy when any
// unit is.
std::vector<sharing::GpuSpace> MemoryGpus(
    const pluginapi::DeviceSnapshot& snapshot) {
  std::vector<sharing::GpuSpace> gpus;
  std::map<std::string, size_t> at;
  std::string uuid;
  int64_t k = 0;
  for (const pluginapi::Device& d : snapshot.devices) {
    if (!sharing::ParseMemoryUnitId(d.id, &uuid, &k)) continue;
    auto [it, added] = at.emplace(uuid, gpus.size());
    if (added) {
      sharing::GpuSpace g;
      g.uuid = uuid;
      g.index = d.gpu_index;
      gpus.push_back(std::move(g));
    }
    ++gpus[it->second].units;
    gpus[it->second].healthy = gpus[it->second].healthy && d.healthy;
  }
  return gpus;
}

std::string PublisherKey(const config::MemoryShares& m) {
  return absl::StrCat(m.resource_name, "|", m.unit_mib, "|",
                      absl::FormatDuration(m.pending_timeout), "|",
                      absl::FormatDuration(m.resync_period));
}

}  // namespace

MemoryShares::MemoryShares(std::string node_name,
                           std::string pod_resources_socket,
                           metrics::Registry& registry, ProcessApiClient& api)
    : node_name_(std::move(node_name)),
      pod_resources_socket_(std::move(pod_resources_socket)),
      registry_(registry),
      api_(api) {}

void MemoryShares::Ensure(const config::Config& config) {
  if (!config.sharing.memory.has_value()) return Reset();
  const config::MemoryShares& m = *config.sharing.memory;
  const std::string key = PublisherKey(m);
  if (Publisher() != nullptr && key == key_) return;
  if (node_name_.empty()) {
    return Without("NODE_NAME is not set (pass it from the downward API)");
  }
  absl::StatusOr<kube::Client*> api = api_.Get();
  if (!api.ok()) {
    return Without(
        absl::StrCat("no API server access: ", api.status().message()));
  }
  if (pod_resources_ == nullptr) {
    pod_resources_ =
        std::make_unique<podresources::Client>(pod_resources_socket_);
  }
  nodeagent::PublisherOptions o;
  o.node_name = node_name_;
  o.resource_name = m.resource_name;
  o.unit_mib = m.unit_mib;
  o.pending_timeout = m.pending_timeout;
  o.resync_period = m.resync_period;
  absl::StatusOr<nodeagent::PublisherMetrics> metrics =
      nodeagent::PublisherMetrics::Register(registry_);
  if (!metrics.ok()) {
    GPULET_LOG(ERROR) << "memory shares: metrics unavailable: "
                      << metrics.status().message();
  }
  auto publisher = std::make_shared<nodeagent::MemoryPublisher>(
      **api, *pod_resources_, std::move(o),
      metrics.ok() ? *metrics : nodeagent::PublisherMetrics{});
  absl::MutexLock lock(&mu_);
  publisher_ = std::move(publisher);
  key_ = key;
  started_ = false;
}

void MemoryShares::Without(const std::string& why) {
  if (!warned_) {
    GPULET_LOG(WARNING) << "memory shares: " << why
                        << "; the memory units are served, but the node "
                           "annotations are not published and preferred "
                           "allocation packs by the policy alone";
    warned_ = true;
  }
  Reset();
}

void MemoryShares::Reset() {
  absl::MutexLock lock(&mu_);
  publisher_.reset();
  started_ = false;
}

std::shared_ptr<nodeagent::MemoryPublisher> MemoryShares::Publisher() const {
  absl::MutexLock lock(&mu_);
  return publisher_;
}

void MemoryShares::WrapHandlers(const config::Config& config,
                                PreparedResource& prepared) {
  if (!config.sharing.memory.has_value() ||
      prepared.spec.resource_name != config.sharing.memory->resource_name) {
    return;
  }
  prepared.role = ResourceRole::kMemoryUnits;
  const config::MemoryShares& m = *config.sharing.memory;
  resources::MemoryHandlerOptions o;
  o.resource_name = m.resource_name;
  o.unit_mib = m.unit_mib;
  o.policy = PolicyOf(m.policy);
  if (m.mps) {
    o.mps_root = config.flags.mps_root;
    o.mps_compute_by_share = m.mps_compute_by_share;
  }
  if (std::shared_ptr<nodeagent::MemoryPublisher> p = Publisher()) {
    // The handlers run on the plugin server's workers (handlers_wait),
    // each within its call's time: the API calls stop with it.
    o.pending = [p](bool refresh, std::string* node_version) {
      return p->Pending(refresh, node_version, pluginapi::CurrentCallStop());
    };
    o.reserve = [p](const std::string& gpu, int64_t units,
                    const std::vector<std::string>& ids,
                    const std::string& node_version) {
      return p->Reserve(gpu, units, ids, node_version,
                        pluginapi::CurrentCallStop());
    };
    o.on_allocate = [p](const std::string& gpu, int64_t units,
                        const std::vector<std::string>& ids) {
      return p->OnAllocate(gpu, units, ids, pluginapi::CurrentCallStop());
    };
  }
  prepared.preferred = resources::MakeMemoryPreferredHandler(o);
  prepared.allocate = resources::MakeMemoryAllocateHandler(
      std::move(prepared.allocate), std::move(o));
}

void MemoryShares::PublishUnits(const pluginapi::DeviceSnapshot* units) {
  absl::MutexLock lock(&mu_);
  if (publisher_ == nullptr) return;
  if (units != nullptr) publisher_->SetGpus(MemoryGpus(*units));
  if (!started_) {
    publisher_->Start(common::RealClock::Get());
    started_ = true;
  }
}

}  // namespace gpulet::daemon
