// Per-claim CDI specs: the transient spec `gpulet dra` writes for each
// prepared claim, from which the runtime injects the claim's devices.
//
// Kind "k8s.gpu.nvidia.com/claim" (NVIDIA's DRA driver's); one CDI device
// per prepared device named "<claim uid>-<DRA device name>", carrying the
// edits of the same GPU or MIG device in the node's spec (cdi::BuildSpec:
// device nodes; a share of a device gets "-<share id>" added), and the
// node spec's spec-wide edits (control nodes, driver
// libraries, the ld-cache hook; every hook with an explicit env and a
// timeout, cdi::SetHookDefaults). A claim's spec is thus complete on its own:
// the runtime needs no other spec, and removing it on unprepare leaves
// nothing of the claim behind. The file is
// "<dir>/k8s.gpu.nvidia.com-claim_<uid>.json".
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "src/dra/kubelet/device_names.h"
#include "src/gpu/device/gpu.h"
#include "src/model/cdi/spec.h"

namespace gpulet::dra {

inline constexpr char kClaimCdiVendor[] = "k8s.gpu.nvidia.com";
inline constexpr char kClaimCdiClass[] = "claim";

// The UUID ("GPU-…" / "MIG-…") of the device `ref` names in `node`.
// NotFound naming `name` when the node has no such GPU or MIG device (it
// disappeared, or the MIG layout changed since the allocation).
absl::StatusOr<std::string> ResolveDevice(const device::Node& node,
                                          const DeviceRef& ref,
                                          const std::string& name);

// One device of a claim: its DRA name, the UUID it resolved to, the
// allocation's share of it (DRAConsumableCapacity; "" for a whole device)
// and what its CDI device adds to the container's environment ("KEY=value":
// a memory share's limit).
struct ClaimDevice {
  std::string dra_name;
  std::string uuid;
  std::string share_id = "";
  std::vector<std::string> env = {};
};

// The claim's spec. FailedPrecondition naming the UUID when `node_spec`
// has no device of that name.
// `env` ("KEY=value", the claim's configuration) is added to every device,
// after the device's own.
absl::StatusOr<cdi::Spec> BuildClaimSpec(
    const cdi::Spec& node_spec, const std::string& claim_uid,
    const std::vector<ClaimDevice>& devices,
    const std::vector<std::string>& env = {});

// "k8s.gpu.nvidia.com/claim=<uid>-<dra name>", and for a share of a
// device "...=<uid>-<dra name>-<share id>": one claim may hold several
// shares of one GPU.
std::string ClaimCdiId(const std::string& claim_uid,
                       const std::string& dra_name,
                       const std::string& share_id = "");

// "<dir>/k8s.gpu.nvidia.com-claim_<uid>.json".
std::string ClaimSpecPath(const std::string& dir, const std::string& claim_uid);

}  // namespace gpulet::dra
