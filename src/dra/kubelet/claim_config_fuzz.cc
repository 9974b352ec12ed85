// libFuzzer target for a claim's opaque configuration, the way `gpulet dra`
// meets it: the input is JSON text, one configuration's `parameters` (NVIDIA's
// GpuConfig / MigDeviceConfig shapes) or an array of them. Each is put into
// a ResourceClaim's status.allocation.devices.config (alternately FromClass
// and FromClaim, our driver) beside one allocated device, read back with
// ReadAllocation and decoded with ParseClaimConfig. No input may crash, hang
// or throw; an error must be InvalidArgument naming the claim; an accepted
// configuration must be one the node side can apply (checked here; a
// violation aborts the run). The webhook's decoder
// (DecodeOpaqueParameters) is the same code.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "nlohmann/json.hpp"
#include "src/dra/kubelet/claim_allocation.h"
#include "src/dra/kubelet/claim_config.h"

namespace {

using gpulet::dra::ClaimRef;
using gpulet::dra::ClaimSharing;
using json = nlohmann::json;

constexpr char kDriver[] = "gpu.nvidia.com";
constexpr char kPool[] = "node-a";

void Check(bool ok) {
  if (!ok) std::abort();
}

json Claim(const json& parameters) {
  json configs = json::array();
  const json list =
      parameters.is_array() ? parameters : json::array({parameters});
  for (size_t i = 0; i < list.size(); ++i) {
    configs.push_back(
        {{"source", i % 2 == 0 ? "FromClass" : "FromClaim"},
         {"requests", json::array({"gpu"})},
         {"opaque", {{"driver", kDriver}, {"parameters", list[i]}}}});
  }
  json result = {{"request", "gpu"},
                 {"driver", kDriver},
                 {"pool", kPool},
                 {"device", "gpu-0"}};
  return {{"metadata", {{"name", "c"}, {"namespace", "ns"}, {"uid", "u1"}}},
          {"status",
           {{"allocation",
             {{"devices",
               {{"results", json::array({result})}, {"config", configs}}}}}}}};
}

void CheckAccepted(const ClaimSharing& s) {
  Check(s.strategy.empty() || s.strategy == "TimeSlicing" ||
        s.strategy == "MPS");
  Check(s.interval.empty() || s.interval == "Default" ||
        s.interval == "Short" || s.interval == "Medium" ||
        s.interval == "Long");
  Check(s.interval.empty() || s.strategy == "TimeSlicing" ||
        s.strategy == "MPS");
  if (s.active_thread_percentage.has_value()) {
    Check(*s.active_thread_percentage >= 1 &&
          *s.active_thread_percentage <= 100);
    Check(s.strategy == "MPS");
  }
  // MPS takes its limits in whole MiB.
  if (s.pinned_memory_limit.has_value()) {
    Check(*s.pinned_memory_limit >= (int64_t{1} << 20));
    Check(s.strategy == "MPS");
  }
  for (const auto& [key, bytes] : s.per_device_pinned_memory_limit) {
    Check(!key.empty() && bytes >= (int64_t{1} << 20));
    Check(s.strategy == "MPS");
  }
  // Every limit lands on one of the daemon's devices, or is refused by name.
  const std::vector<std::string> uuids = {"GPU-a", "GPU-b"};
  absl::StatusOr<std::map<std::string, int64_t>> limits =
      s.PinnedMemoryLimitsMiB(uuids);
  if (!limits.ok()) {
    Check(absl::StartsWith(
        limits.status().message(),
        "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit["));
    return;
  }
  for (const auto& [uuid, mib] : *limits) {
    Check((uuid == "GPU-a" || uuid == "GPU-b") && mib >= 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const json parameters = json::parse(data, data + size, nullptr,
                                      /*allow_exceptions=*/false);
  if (parameters.is_discarded()) return 0;
  const ClaimRef ref{.namespace_name = "ns", .name = "c", .uid = "u1"};
  absl::StatusOr<gpulet::dra::ClaimAllocation> allocation =
      gpulet::dra::ReadAllocation(Claim(parameters), ref, kDriver, kPool);
  Check(allocation.ok());
  Check(allocation->devices.size() == 1);
  absl::StatusOr<ClaimSharing> sharing =
      gpulet::dra::ParseClaimConfig(allocation->configs, ref);
  if (!sharing.ok()) {
    Check(sharing.status().code() == absl::StatusCode::kInvalidArgument);
    Check(absl::StartsWith(sharing.status().message(),
                           "claim ns/c: opaque config ["));
    return 0;
  }
  CheckAccepted(*sharing);
  // Decoding is a function of its input.
  absl::StatusOr<ClaimSharing> again =
      gpulet::dra::ParseClaimConfig(allocation->configs, ref);
  Check(again.ok() && *again == *sharing);
  return 0;
}
