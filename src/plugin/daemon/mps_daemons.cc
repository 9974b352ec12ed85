#include "src/plugin/daemon/mps_daemons.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/common/logging.h"
#include "src/gpu/mps/mps_paths.h"
#include "src/model/cdi/driver.h"
#include "src/model/resources/resource_handlers.h"
#include "src/model/sharing/unit_id.h"

namespace gpulet::daemon {
namespace {

constexpr char kMpsControl[] = "nvidia-cuda-mps-control";
constexpr char kNvidiaSmi[] = "nvidia-smi";

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

const device::Gpu* FindGpu(const device::Node& node, const std::string& uuid) {
  for (const device::Gpu& gpu : node.gpus) {
    if (gpu.uuid == uuid) return &gpu;
  }
  return nullptr;
}

}  // namespace

SharingMpsPlan PlanSharingMps(const config::Config& config,
                              const std::vector<PreparedResource>& prepared,
                              const device::Node& node) {
  SharingMpsPlan plan;
  if (config.sharing.Strategy() != config::SharingStrategy::kMps) return plan;
  std::map<std::string, int> replicas;  // shared device -> its replicas
  for (const PreparedResource& p : prepared) {
    if (p.role != ResourceRole::kGpus) continue;
    for (const pluginapi::Device& d : p.spec.devices) {
      const std::string gpu = MpsDaemonGpu(d, p.role);
      if (!gpu.empty()) ++replicas[gpu];
    }
  }
  for (const auto& [uuid, n] : replicas) {
    plan.replicas.insert(uuid);
    const device::Gpu* gpu = FindGpu(node, uuid);
    if (gpu == nullptr) continue;  // a MIG device: no daemon
    plan.daemons[uuid] = mps::DaemonSettings{
        sharing::MpsReplicaLimitCommands(gpu->memory_total_bytes, n), true};
  }
  return plan;
}

MpsDaemons::MpsDaemons(metrics::Registry& registry, ServedResources& served)
    : registry_(registry), served_(served) {}

void MpsDaemons::Stop() {
  supervisor_.reset();  // tells every daemon to quit
  key_.clear();
}

void MpsDaemons::Ensure(const config::Config& config,
                        const std::vector<PreparedResource>& prepared,
                        const device::Node& node) {
  const bool memory_mps =
      config.sharing.memory.has_value() && config.sharing.memory->mps;
  SharingMpsPlan plan = PlanSharingMps(config, prepared, node);
  std::map<std::string, mps::DaemonSettings> daemons = plan.daemons;
  for (const std::string& uuid : plan.replicas) {
    if (!plan.daemons.contains(uuid)) {
      GPULET_LOG(ERROR) << "sharing.mps: " << uuid
                        << " is a MIG device, which MPS replicas do not "
                           "support; its replicas stay Unhealthy";
    } else {
      GPULET_LOG(INFO) << "sharing.mps: " << uuid << "'s MPS control daemon: "
                       << absl::StrJoin(plan.daemons.at(uuid).commands, "; ");
    }
  }
  for (const PreparedResource& p : prepared) {
    if (!memory_mps ||
        p.spec.resource_name != config.sharing.memory->resource_name) {
      continue;
    }
    for (const std::string& uuid : UnitGpus(p.spec.devices)) {
      daemons[uuid] = mps::DaemonSettings{};
    }
  }
  if (!memory_mps && plan.replicas.empty()) {
    Stop();
    served_.ResetMps(false);
    served_.SetMpsReplicas({});
    return;
  }
  served_.SetMpsReplicas(plan.replicas);
  if (EnsureSupervisor(config, memory_mps)) {
    supervisor_->SetDaemons(std::move(daemons));
  }
}

bool MpsDaemons::EnsureSupervisor(const config::Config& config,
                                  bool memory_mps) {
  const std::string root = resources::MakeHostView(config).driver_root;
  absl::StatusOr<std::string> binary = cdi::FindDriverBinary(root, kMpsControl);
  absl::StatusOr<std::string> smi = cdi::FindDriverBinary(root, kNvidiaSmi);
  // Whether memory units follow the daemons is ServedResources' reset,
  // so turning memory shares' MPS on or off starts the daemons over.
  const std::string key =
      absl::StrCat(binary.ok() ? *binary : "", "|", smi.ok() ? *smi : "", "|",
                   config.flags.mps_root, "|", memory_mps);
  if (supervisor_ != nullptr && key == key_) return true;
  supervisor_.reset();
  served_.ResetMps(memory_mps);
  key_ = key;
  if (!binary.ok()) {
    GPULET_LOG(ERROR) << "MPS: " << binary.status().message()
                      << "; the devices shared with MPS stay Unhealthy";
    return false;
  }
  mps::SupervisorOptions o;
  o.binary = *binary;
  o.nvidia_smi = smi.ok() ? *smi : "";
  o.mps_root = config.flags.mps_root;
  o.registry = &registry_;
  o.on_change = [this](const std::string& uuid, bool up,
                       const std::string& reason) {
    served_.OnMps(uuid, up, reason);
  };
  absl::StatusOr<std::unique_ptr<mps::Supervisor>> s =
      mps::Supervisor::Create(std::move(o));
  if (!s.ok()) {
    GPULET_LOG(ERROR) << "MPS: " << s.status().message()
                      << "; the devices shared with MPS stay Unhealthy";
    return false;
  }
  supervisor_ = *std::move(s);
  return true;
}

}  // namespace gpulet::daemon
