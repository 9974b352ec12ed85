// ClaimPreparer at start: every checkpointed claim's CDI spec written again
// (claim_preparer.h), so that what an earlier release wrote (a hook without
// an environment, the node-wide /dev/shm of its MPS claims) does not
// outlive an upgrade.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/logging.h"
#include "src/base/common/status_macros.h"
#include "src/dra/kubelet/claim_preparer.h"
#include "src/dra/kubelet/device_names.h"
#include "src/gpu/mps/mps_paths.h"
#include "src/model/cdi/spec_file.h"

namespace gpulet::dra {
namespace {

// The memory of a share that a checkpoint of an earlier release does not
// record, from the limit its spec (gpulet's own file) gave the device.
std::optional<int64_t> MemoryInOldSpec(const std::string& spec_path,
                                       const std::string& cdi_id) {
  absl::StatusOr<cdi::Spec> spec = cdi::ReadSpecFile(spec_path);
  const size_t eq = cdi_id.find('=');
  if (!spec.ok() || eq == std::string::npos) return std::nullopt;
  const std::string name = cdi_id.substr(eq + 1);
  const std::string prefix = absl::StrCat(sharing::kMemoryLimitEnv, "=");
  for (const cdi::Device& d : spec->devices) {
    if (d.name != name) continue;
    for (const std::string& e : d.edits.env) {
      int64_t mib = 0;
      if (absl::StartsWith(e, prefix) &&
          absl::SimpleAtoi(e.substr(prefix.size()), &mib) && mib > 0 &&
          mib < (int64_t{1} << 40)) {
        return mib << 20;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

void ClaimPreparer::RewriteSpecs() {
  for (const auto& entry : prepared_) {
    const PreparedClaim& claim = entry.second;
    absl::Status s = RewriteSpec(claim);
    if (s.ok()) {
      GPULET_LOG(INFO) << "claim " << ClaimName(claim.ref)
                       << ": CDI spec written again";
    } else {
      GPULET_LOG(WARNING) << "claim " << ClaimName(claim.ref)
                          << ": CDI spec left as it was: " << s.message();
    }
  }
}

absl::Status ClaimPreparer::RewriteSpec(const PreparedClaim& claim) {
  SharingEdits edits;
  if (!claim.sharing.strategy.empty()) {
    auto it = reapplied_.find(claim.ref.uid);
    if (it == reapplied_.end()) {
      return absl::FailedPreconditionError("its sharing was not applied again");
    }
    edits.env.insert(edits.env.end(), it->second.env.begin(),
                     it->second.env.end());
    edits.mounts = it->second.mounts;
  }
  std::vector<ClaimDevice> devices;
  std::optional<int64_t> only_memory;
  for (const PreparedDevice& d : claim.devices) {
    std::string uuid = d.uuid;
    if (uuid.empty()) {  // a checkpoint of an earlier release
      GPULET_ASSIGN_OR_RETURN(DeviceRef parsed, ParseDeviceName(d.device));
      GPULET_ASSIGN_OR_RETURN(uuid, ResolveDevice(node_, parsed, d.device));
    }
    std::optional<int64_t> memory = d.consumed_memory;
    if (!memory.has_value() && d.share_id.has_value() &&
        !d.cdi_device_ids.empty()) {
      memory = MemoryInOldSpec(claim.cdi_spec_path, d.cdi_device_ids[0]);
    }
    only_memory = memory;
    devices.push_back({.dra_name = d.device,
                       .uuid = uuid,
                       .share_id = d.share_id.value_or(""),
                       .env = ShareEnv(memory)});
  }
  AddMpsLimit(claim.sharing, devices.size() == 1 ? only_memory : std::nullopt,
              devices);
  return WriteSpec(claim.ref, devices, edits, claim);
}

}  // namespace gpulet::dra
