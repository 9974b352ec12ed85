#include "src/dra/kubelet/claim_cdi.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/model/cdi/spec_builder.h"
#include "src/model/cdi/validate.h"

namespace gpulet::dra {
namespace {

std::string ClaimDeviceName(const std::string& claim_uid,
                            const std::string& dra_name,
                            const std::string& share_id) {
  if (share_id.empty()) return absl::StrCat(claim_uid, "-", dra_name);
  return absl::StrCat(claim_uid, "-", dra_name, "-", share_id);
}

}  // namespace

absl::StatusOr<std::string> ResolveDevice(const device::Node& node,
                                          const DeviceRef& ref,
                                          const std::string& name) {
  for (const device::Gpu& gpu : node.gpus) {
    if (static_cast<int>(gpu.index) != ref.gpu_index) continue;
    if (!ref.mig) {
      if (gpu.mig_enabled) {
        return absl::FailedPreconditionError(absl::StrCat(
            "device ", name, ": GPU ", gpu.index,
            " is in MIG mode; only its MIG devices can be prepared"));
      }
      return gpu.uuid;
    }
    for (const device::MigDevice& mig : gpu.mig_devices) {
      if (mig.gi_placement &&
          static_cast<int>(mig.gi_placement->profile_id) == ref.profile_id &&
          static_cast<int>(mig.gi_placement->start) == ref.placement_start &&
          static_cast<int>(mig.gi_placement->size) == ref.placement_size) {
        return mig.uuid;
      }
    }
    return absl::NotFoundError(absl::StrCat(
        "device ", name, ": GPU ", gpu.index,
        " has no MIG device with that GPU instance profile and placement"));
  }
  return absl::NotFoundError(absl::StrCat(
      "device ", name, ": no GPU with index ", ref.gpu_index, " on this node"));
}

absl::StatusOr<cdi::Spec> BuildClaimSpec(
    const cdi::Spec& node_spec, const std::string& claim_uid,
    const std::vector<ClaimDevice>& devices,
    const std::vector<std::string>& env) {
  cdi::Spec spec;
  spec.kind = absl::StrCat(kClaimCdiVendor, "/", kClaimCdiClass);
  spec.edits = node_spec.edits;
  for (const ClaimDevice& want : devices) {
    const cdi::Device* found = nullptr;
    for (const cdi::Device& d : node_spec.devices) {
      if (d.name == want.uuid) found = &d;
    }
    if (found == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("device ", want.dra_name,
                       ": the node's CDI spec has "
                       "no device ",
                       want.uuid));
    }
    cdi::Device device;
    device.name = ClaimDeviceName(claim_uid, want.dra_name, want.share_id);
    device.edits = found->edits;
    device.edits.env.insert(device.edits.env.end(), want.env.begin(),
                            want.env.end());
    device.edits.env.insert(device.edits.env.end(), env.begin(), env.end());
    spec.devices.push_back(std::move(device));
  }
  // The node spec's hooks have these already when gpulet built it; a claim
  // spec is written by gpulet, so it never carries a hook without them.
  cdi::SetHookDefaults(spec);
  spec.cdi_version = cdi::MinimumVersion(spec);
  return spec;
}

std::string ClaimCdiId(const std::string& claim_uid,
                       const std::string& dra_name,
                       const std::string& share_id) {
  return cdi::QualifiedName(kClaimCdiVendor, kClaimCdiClass,
                            ClaimDeviceName(claim_uid, dra_name, share_id));
}

std::string ClaimSpecPath(const std::string& dir,
                          const std::string& claim_uid) {
  return absl::StrCat(dir, "/", kClaimCdiVendor, "-", kClaimCdiClass, "_",
                      claim_uid, ".json");
}

}  // namespace gpulet::dra
