// Daemon::Impl, memory shares: the node agent that publishes the
// memory-share Node annotations, and the memory-unit resource's handlers
// wired to it (see daemon_impl.h and docs/sharing.md).
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/common/clock.h"
#include "src/base/common/logging.h"
#include "src/net/kube/kubeconfig.h"
#include "src/plugin/daemon/daemon_impl.h"
#include "src/net/kube/tls_transport.h"
#include "src/net/kube/sleeper.h"
#include "src/model/resources/memory_handlers.h"
#include "src/model/sharing/unit_id.h"

namespace gpulet::daemon {
namespace {

// The process's API client: a GET per preferred allocation and a GET and
// a PATCH per Allocate for memory shares; client-go's 5 per second would
// make a burst of pods wait on the node agent (the extender's default is
// the same 50).
kube::ClientOptions ApiClientOptions() {
  kube::ClientOptions o;
  o.qps = 50;
  o.burst = 100;
  return o;
}

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

}  // namespace

absl::StatusOr<kube::Client*> Daemon::Impl::ApiClient() {
  if (kube_client_ != nullptr) return kube_client_.get();
  absl::StatusOr<config::ApiServerConfig> api =
      config::LoadApiServerConfig(options_.kubeconfig);
  if (!api.ok()) return api.status();
  absl::StatusOr<std::unique_ptr<kube::TlsTransport>> transport =
      kube::TlsTransport::Create(*api);
  if (!transport.ok()) return transport.status();
  kube_transport_ = *std::move(transport);
  kube_client_ = std::make_unique<kube::Client>(
      *kube_transport_, common::RealClock::Get(), kube::RealSleeper::Get(),
      ApiClientOptions());
  return kube_client_.get();
}

void Daemon::Impl::EnsurePublisher(const config::Config& config) {
  if (!config.sharing.memory.has_value()) {
    absl::MutexLock lock(&mu_);
    publisher_.reset();
    publisher_started_ = false;
    memory_resource_.clear();
    return;
  }
  const config::MemoryShares& m = *config.sharing.memory;
  {
    absl::MutexLock lock(&mu_);
    memory_resource_ = m.resource_name;
  }
  const std::string key = absl::StrCat(
      m.resource_name, "|", m.unit_mib, "|",
      absl::FormatDuration(m.pending_timeout), "|",
      absl::FormatDuration(m.resync_period));
  if (publisher_ != nullptr && key == publisher_key_) return;
  auto without = [&](const std::string& why) {
    if (!memory_warned_) {
      GPULET_LOG(WARNING) << "memory shares: " << why
                          << "; the memory units are served, but the node "
                             "annotations are not published and preferred "
                             "allocation packs by the policy alone";
      memory_warned_ = true;
    }
    absl::MutexLock lock(&mu_);
    publisher_.reset();
    publisher_started_ = false;
  };
  if (options_.node_name.empty()) {
    return without("NODE_NAME is not set (pass it from the downward API)");
  }
  absl::StatusOr<kube::Client*> api = ApiClient();
  if (!api.ok()) {
    return without(
        absl::StrCat("no API server access: ", api.status().message()));
  }
  if (pod_resources_ == nullptr) {
    pod_resources_ =
        std::make_unique<podresources::Client>(options_.pod_resources_socket);
  }
  nodeagent::PublisherOptions o;
  o.node_name = options_.node_name;
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
  publisher_key_ = key;
  publisher_started_ = false;
}

void Daemon::Impl::WrapMemoryHandlers(const config::Config& config,
                                      Prepared& prepared) {
  if (!config.sharing.memory.has_value() ||
      prepared.spec.resource_name != config.sharing.memory->resource_name) {
    return;
  }
  const config::MemoryShares& m = *config.sharing.memory;
  resources::MemoryHandlerOptions o;
  o.resource_name = m.resource_name;
  o.unit_mib = m.unit_mib;
  o.policy = PolicyOf(m.policy);
  if (m.mps) {
    o.mps_root = config.flags.mps_root;
    o.mps_compute_by_share = m.mps_compute_by_share;
  }
  if (std::shared_ptr<nodeagent::MemoryPublisher> p = publisher_) {
    o.pending = [p](bool refresh, std::string* node_version) {
      return p->Pending(refresh, node_version);
    };
    o.reserve = [p](const std::string& gpu, int64_t units,
                    const std::vector<std::string>& ids,
                    const std::string& node_version) {
      return p->Reserve(gpu, units, ids, node_version);
    };
    o.on_allocate = [p](const std::string& gpu, int64_t units,
                        const std::vector<std::string>& ids) {
      p->OnAllocate(gpu, units, ids);
    };
  }
  prepared.preferred = resources::MakeMemoryPreferredHandler(o);
  prepared.allocate = resources::MakeMemoryAllocateHandler(
      std::move(prepared.allocate), std::move(o));
}

void Daemon::Impl::PublishMemoryGpus() {
  if (publisher_ == nullptr || memory_resource_.empty()) return;
  for (auto& runner : runners_) {
    if (runner->resource_name() != memory_resource_) continue;
    publisher_->SetGpus(MemoryGpus(*runner->devices().Snapshot()));
  }
  if (!publisher_started_) {
    publisher_->Start(kube::RealSleeper::Get());
    publisher_started_ = true;
  }
}

}  // namespace gpulet::daemon
