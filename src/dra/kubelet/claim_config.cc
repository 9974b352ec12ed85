#include "src/dra/kubelet/claim_config.h"

#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/status_macros.h"

namespace gpulet::dra {
namespace {

using json = nlohmann::json;

absl::Status Bad(const ClaimRef& ref, size_t index, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(
      "claim ", ClaimName(ref), ": opaque config [", index, "]: ", what));
}

absl::Status OnlyKeys(const json& object, const std::set<std::string>& keys,
                      const std::string& where, const ClaimRef& ref,
                      size_t index) {
  for (const auto& [key, value] : object.items()) {
    if (!keys.contains(key)) {
      return Bad(ref, index,
                 absl::StrCat(where, "unknown field \"", key, "\""));
    }
  }
  return absl::OkStatus();
}

absl::Status ApplySharing(const json& sharing, const ClaimRef& ref,
                          size_t index, ClaimSharing& out) {
  if (!sharing.is_object()) return Bad(ref, index, "sharing is not an object");
  GPULET_RETURN_IF_ERROR(
      OnlyKeys(sharing, {"strategy", "timeSlicingConfig", "mpsConfig"},
               "sharing: ", ref, index));
  const json strategy = sharing.value("strategy", json());
  if (!strategy.is_string() ||
      (strategy != "TimeSlicing" && strategy != "MPS")) {
    return Bad(ref, index,
               absl::StrCat("sharing.strategy ", strategy.dump(),
                            " is not TimeSlicing or MPS"));
  }
  out = ClaimSharing{.strategy = strategy.get<std::string>(),
                     .interval = "",
                     .active_thread_percentage = std::nullopt};
  if (auto ts = sharing.find("timeSlicingConfig"); ts != sharing.end()) {
    const json interval =
        ts->is_object() ? ts->value("interval", json()) : json();
    static const std::set<std::string> kIntervals = {"Default", "Short",
                                                     "Medium", "Long"};
    if (!interval.is_string() ||
        !kIntervals.contains(interval.get<std::string>())) {
      return Bad(
          ref, index,
          absl::StrCat("sharing.timeSlicingConfig.interval ", interval.dump(),
                       " is not Default, Short, Medium or Long"));
    }
    out.interval = interval.get<std::string>();
  }
  if (auto mps = sharing.find("mpsConfig"); mps != sharing.end()) {
    const json pct = mps->is_object()
                         ? mps->value("defaultActiveThreadPercentage", json())
                         : json();
    if (!pct.is_null()) {
      if (!pct.is_number_integer() || pct.get<int64_t>() < 1 ||
          pct.get<int64_t>() > 100) {
        return Bad(
            ref, index,
            absl::StrCat("sharing.mpsConfig.defaultActiveThreadPercentage ",
                         pct.dump(), " is not an integer in 1..100"));
      }
      out.active_thread_percentage = pct.get<int>();
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> ClaimSharing::Env() const {
  std::vector<std::string> env;
  if (strategy == "MPS" && active_thread_percentage) {
    env.push_back(absl::StrCat("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=",
                               *active_thread_percentage));
  }
  return env;
}

absl::StatusOr<ClaimSharing> ParseClaimConfig(
    const std::vector<OpaqueConfig>& configs, const ClaimRef& ref) {
  ClaimSharing out;
  for (size_t i = 0; i < configs.size(); ++i) {
    const json& p = configs[i].parameters;
    if (!p.is_object()) return Bad(ref, i, "parameters is not an object");
    GPULET_RETURN_IF_ERROR(
        OnlyKeys(p, {"apiVersion", "kind", "sharing"}, "", ref, i));
    if (p.value("apiVersion", json()) != "resource.nvidia.com/v1beta1") {
      return Bad(
          ref, i,
          absl::StrCat("apiVersion ", p.value("apiVersion", json()).dump(),
                       " is not resource.nvidia.com/v1beta1"));
    }
    const json kind = p.value("kind", json());
    if (kind != "GpuConfig" && kind != "MigDeviceConfig") {
      return Bad(ref, i,
                 absl::StrCat("kind ", kind.dump(),
                              " is not GpuConfig or MigDeviceConfig"));
    }
    if (auto sharing = p.find("sharing"); sharing != p.end()) {
      GPULET_RETURN_IF_ERROR(ApplySharing(*sharing, ref, i, out));
    }
  }
  return out;
}

}  // namespace gpulet::dra
