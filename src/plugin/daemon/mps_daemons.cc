#include "src/plugin/daemon/mps_daemons.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/logging.h"
#include "src/model/cdi/driver.h"
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

MpsDaemons::MpsDaemons(metrics::Registry& registry, ServedResources& served)
    : registry_(registry), served_(served) {}

void MpsDaemons::Stop() {
  supervisor_.reset();  // tells every daemon to quit
  key_.clear();
}

void MpsDaemons::Ensure(const config::Config& config,
                        const std::vector<PreparedResource>& prepared) {
  const bool wanted =
      config.sharing.memory.has_value() && config.sharing.memory->mps;
  if (!wanted) {
    Stop();
    served_.ResetMps(false);
    return;
  }
  std::vector<std::string> gpus;
  for (const PreparedResource& p : prepared) {
    if (p.spec.resource_name == config.sharing.memory->resource_name) {
      gpus = UnitGpus(p.spec.devices);
    }
  }
  const std::string root = resources::MakeHostView(config).driver_root;
  absl::StatusOr<std::string> binary = cdi::FindDriverBinary(root, kMpsControl);
  const std::string key =
      absl::StrCat(binary.ok() ? *binary : "", "|", config.flags.mps_root);
  if (supervisor_ == nullptr || key != key_) {
    supervisor_.reset();
    served_.ResetMps(true);
    key_ = key;
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
      served_.OnMps(uuid, up, reason);
    };
    absl::StatusOr<std::unique_ptr<mps::Supervisor>> s =
        mps::Supervisor::Create(std::move(o));
    if (!s.ok()) {
      GPULET_LOG(ERROR) << "memory shares with MPS: " << s.status().message()
                        << "; the memory units stay Unhealthy";
      return;
    }
    supervisor_ = *std::move(s);
  }
  supervisor_->SetGpus(gpus);
}

}  // namespace gpulet::daemon
