#include "src/dra/kubelet/claim_config.h"

#include <algorithm>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/status_macros.h"
#include "src/dra/kubelet/quantity.h"

namespace gpulet::dra {
namespace {

using json = nlohmann::json;

constexpr char kApiVersion[] = "resource.nvidia.com/v1beta1";
constexpr int64_t kMiB = int64_t{1} << 20;

// A field's path below `parent` ("" at the top).
std::string Field(absl::string_view parent, absl::string_view name) {
  return parent.empty() ? std::string(name) : absl::StrCat(parent, ".", name);
}

absl::Status Bad(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

bool Absent(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null();
}

// `value` must be an object (or null: absent) with only `keys`.
absl::Status CheckObject(const json& value, absl::string_view path,
                         const std::set<std::string>& keys) {
  if (!value.is_object()) {
    return Bad(path.empty() ? "parameters" : path, "is not an object");
  }
  for (const auto& [key, member] : value.items()) {
    if (!keys.contains(key)) {
      return Bad(Field(path, key),
                 "unknown field (not in NVIDIA's resource.nvidia.com/v1beta1 "
                 "API, or not of this kind)");
    }
  }
  return absl::OkStatus();
}

// A resource.Quantity as Kubernetes reads one from JSON (a string, or a
// bare number), of at least 1 MiB (MPS takes its limits in MiB).
absl::StatusOr<int64_t> MemoryLimit(const json& value, absl::string_view path) {
  std::string text;
  if (value.is_string()) {
    text = value.get<std::string>();
  } else if (value.is_number_integer()) {
    text = value.dump();
  } else {
    return Bad(path, absl::StrCat(value.dump(), " is not a quantity"));
  }
  absl::StatusOr<int64_t> bytes = ParseQuantity(text);
  if (!bytes.ok()) return Bad(path, bytes.status().message());
  if (*bytes < kMiB) {
    return Bad(path, absl::StrCat("\"", text,
                                  "\" is below 1Mi (MPS limits are whole "
                                  "MiB)"));
  }
  return *bytes;
}

// A defaultPerDevicePinnedMemoryLimit key: a device index or a UUID.
bool DeviceKey(const std::string& key) {
  if (!key.empty() && key.size() <= 4 &&
      std::all_of(key.begin(), key.end(), absl::ascii_isdigit)) {
    return true;
  }
  return (absl::StartsWith(key, "GPU-") || absl::StartsWith(key, "MIG-")) &&
         key.size() > 4 && key.size() <= 64;
}

std::string Entry(absl::string_view path, const std::string& key) {
  return absl::StrCat(path, "[", json(key).dump(), "]");
}

absl::Status DecodePerDevice(const json& limits, absl::string_view path,
                             ClaimSharing& out) {
  if (!limits.is_object()) return Bad(path, "is not an object");
  for (const auto& [key, value] : limits.items()) {
    const std::string entry = Entry(path, key);
    if (!DeviceKey(key)) {
      return Bad(entry,
                 "the key is neither a device index of the claim nor a GPU "
                 "or MIG UUID");
    }
    GPULET_ASSIGN_OR_RETURN(out.per_device_pinned_memory_limit[key],
                            MemoryLimit(value, entry));
  }
  return absl::OkStatus();
}

absl::Status DecodeMps(const json& mps, absl::string_view path,
                       ClaimSharing& out) {
  GPULET_RETURN_IF_ERROR(CheckObject(
      mps, path,
      {"defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit",
       "defaultPerDevicePinnedMemoryLimit"}));
  if (!Absent(mps, "defaultActiveThreadPercentage")) {
    const json& pct = mps["defaultActiveThreadPercentage"];
    if (!pct.is_number_integer() || pct.get<int64_t>() < 1 ||
        pct.get<int64_t>() > 100) {
      return Bad(Field(path, "defaultActiveThreadPercentage"),
                 absl::StrCat(pct.dump(), " is not an integer from 1 to 100"));
    }
    out.active_thread_percentage = pct.get<int>();
  }
  if (!Absent(mps, "defaultPinnedDeviceMemoryLimit")) {
    GPULET_ASSIGN_OR_RETURN(
        out.pinned_memory_limit,
        MemoryLimit(mps["defaultPinnedDeviceMemoryLimit"],
                    Field(path, "defaultPinnedDeviceMemoryLimit")));
  }
  if (!Absent(mps, "defaultPerDevicePinnedMemoryLimit")) {
    GPULET_RETURN_IF_ERROR(
        DecodePerDevice(mps["defaultPerDevicePinnedMemoryLimit"],
                        Field(path, "defaultPerDevicePinnedMemoryLimit"), out));
  }
  return absl::OkStatus();
}

absl::Status DecodeTimeSlicing(const json& ts, absl::string_view path,
                               ClaimSharing& out) {
  GPULET_RETURN_IF_ERROR(CheckObject(ts, path, {"interval"}));
  if (Absent(ts, "interval")) return absl::OkStatus();
  const json& interval = ts["interval"];
  static const std::set<std::string> kIntervals = {"Default", "Short", "Medium",
                                                   "Long"};
  if (!interval.is_string() ||
      !kIntervals.contains(interval.get<std::string>())) {
    return Bad(Field(path, "interval"),
               absl::StrCat(interval.dump(),
                            " is not Default, Short, Medium or Long"));
  }
  out.interval = interval.get<std::string>();
  return absl::OkStatus();
}

// GpuSharing (GpuConfig) or MigDeviceSharing (MigDeviceConfig, which has no
// timeSlicingConfig: MIG devices keep no time-slice of their own).
absl::Status DecodeSharing(const json& sharing, absl::string_view path,
                           bool mig, ClaimSharing& out) {
  std::set<std::string> keys = {"strategy", "mpsConfig"};
  if (!mig) keys.insert("timeSlicingConfig");
  GPULET_RETURN_IF_ERROR(CheckObject(sharing, path, keys));
  const json strategy = sharing.value("strategy", json());
  if (!strategy.is_string() ||
      (strategy != "TimeSlicing" && strategy != "MPS")) {
    return Bad(Field(path, "strategy"),
               absl::StrCat(strategy.dump(), " is not TimeSlicing or MPS"));
  }
  out.strategy = strategy.get<std::string>();
  const bool mps = out.strategy == "MPS";
  if (!Absent(sharing, "timeSlicingConfig")) {
    const std::string field = Field(path, "timeSlicingConfig");
    if (mps) return Bad(field, "is for strategy TimeSlicing, not MPS");
    GPULET_RETURN_IF_ERROR(
        DecodeTimeSlicing(sharing["timeSlicingConfig"], field, out));
  }
  if (!Absent(sharing, "mpsConfig")) {
    const std::string field = Field(path, "mpsConfig");
    if (!mps) return Bad(field, "is for strategy MPS, not TimeSlicing");
    GPULET_RETURN_IF_ERROR(DecodeMps(sharing["mpsConfig"], field, out));
  }
  return absl::OkStatus();
}

// VfioDeviceConfig's iommu, checked so that a mistake is named, although
// the kind itself is refused.
absl::Status CheckIommu(const json& iommu, absl::string_view path) {
  GPULET_RETURN_IF_ERROR(
      CheckObject(iommu, path, {"backendPolicy", "enableAPIDevice"}));
  const json policy = iommu.value("backendPolicy", json(""));
  if (!policy.is_null() && policy != "" && policy != "LegacyOnly" &&
      policy != "PreferIommuFD") {
    return Bad(
        Field(path, "backendPolicy"),
        absl::StrCat(policy.dump(), " is not LegacyOnly or PreferIommuFD"));
  }
  if (!Absent(iommu, "enableAPIDevice") &&
      !iommu["enableAPIDevice"].is_boolean()) {
    return Bad(
        Field(path, "enableAPIDevice"),
        absl::StrCat(iommu["enableAPIDevice"].dump(), " is not true or false"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::map<std::string, int64_t>>
ClaimSharing::PinnedMemoryLimitsMiB(
    const std::vector<std::string>& uuids) const {
  std::map<std::string, int64_t> mib;
  if (pinned_memory_limit.has_value()) {
    for (const std::string& uuid : uuids)
      mib[uuid] = *pinned_memory_limit / kMiB;
  }
  constexpr char kPath[] =
      "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit";
  for (const auto& [key, bytes] : per_device_pinned_memory_limit) {
    size_t index = 0;
    std::string uuid;
    if (absl::SimpleAtoi(key, &index)) {
      if (index >= uuids.size()) {
        return Bad(Entry(kPath, key),
                   absl::StrCat("the claim has ", uuids.size(),
                                " device(s) for MPS, indexed from 0"));
      }
      uuid = uuids[index];
    } else if (std::find(uuids.begin(), uuids.end(), key) != uuids.end()) {
      uuid = key;
    } else {
      return Bad(Entry(kPath, key), "is not one of the claim's devices");
    }
    mib[uuid] = bytes / kMiB;
  }
  return mib;
}

absl::StatusOr<OpaqueSettings> DecodeOpaqueParameters(const json& parameters,
                                                      absl::string_view path) {
  GPULET_RETURN_IF_ERROR(CheckObject(
      parameters, path, {"apiVersion", "kind", "sharing", "iommu"}));
  const json version = parameters.value("apiVersion", json());
  if (version != kApiVersion) {
    return Bad(Field(path, "apiVersion"),
               absl::StrCat(version.dump(), " is not ", kApiVersion));
  }
  const json kind = parameters.value("kind", json());
  OpaqueSettings out;
  if (kind == "VfioDeviceConfig") {
    if (!Absent(parameters, "sharing")) {
      return Bad(Field(path, "sharing"), "is not a field of VfioDeviceConfig");
    }
    if (!Absent(parameters, "iommu")) {
      GPULET_RETURN_IF_ERROR(
          CheckIommu(parameters["iommu"], Field(path, "iommu")));
    }
    return Bad(Field(path, "kind"),
               "VfioDeviceConfig is not implemented: gpulet dra publishes no "
               "VFIO devices for it to configure");
  }
  if (kind != "GpuConfig" && kind != "MigDeviceConfig") {
    return Bad(Field(path, "kind"),
               absl::StrCat(kind.dump(),
                            " is not GpuConfig, MigDeviceConfig or "
                            "VfioDeviceConfig"));
  }
  out.kind = kind.get<std::string>();
  if (!Absent(parameters, "iommu")) {
    return Bad(Field(path, "iommu"),
               absl::StrCat("is not a field of ", out.kind));
  }
  if (!Absent(parameters, "sharing")) {
    GPULET_RETURN_IF_ERROR(
        DecodeSharing(parameters["sharing"], Field(path, "sharing"),
                      out.kind == "MigDeviceConfig", out.sharing));
  }
  return out;
}

absl::StatusOr<ClaimSharing> ParseClaimConfig(
    const std::vector<OpaqueConfig>& configs, const ClaimRef& ref) {
  ClaimSharing out;
  for (size_t i = 0; i < configs.size(); ++i) {
    absl::StatusOr<OpaqueSettings> settings =
        DecodeOpaqueParameters(configs[i].parameters);
    if (!settings.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("claim ", ClaimName(ref), ": opaque config [", i,
                       "]: ", settings.status().message()));
    }
    out = std::move(settings->sharing);
  }
  return out;
}

}  // namespace gpulet::dra
