// The `fabric:` key of a GPU entry: the GPU's place in a multi-node NVLink
// domain, as nvmlDeviceGetGpuFabricInfo(V) reports it.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "sim/gpu_parser.h"
#include "src/base/common/status_macros.h"

namespace gpulet::sim::parser {
namespace {

using yaml::Ctx;
using yaml::Field;
using yaml::MapView;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  return absl::ascii_tolower(static_cast<unsigned char>(c)) - 'a' + 10;
}

// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (hex, either case) into 16 bytes.
absl::StatusOr<std::array<unsigned char, NVML_GPU_FABRIC_UUID_LEN>>
ReadClusterUuid(const Ctx& ctx, const Field& field) {
  GPULET_ASSIGN_OR_RETURN(std::string text, yaml::ReadString(ctx, field, 64));
  std::array<unsigned char, NVML_GPU_FABRIC_UUID_LEN> out = {};
  std::string digits;
  bool ok = text.size() == 36;
  for (size_t i = 0; ok && i < text.size(); ++i) {
    const bool dash_here = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_here) {
      ok = text[i] == '-';
    } else {
      ok = absl::ascii_isxdigit(static_cast<unsigned char>(text[i]));
      digits += text[i];
    }
  }
  if (!ok) {
    return yaml::FieldError(
        ctx, field,
        absl::StrCat("malformed cluster UUID \"", absl::CHexEscape(text),
                     "\" (expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in "
                     "hex)"));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<unsigned char>(HexValue(digits[2 * i]) * 16 +
                                        HexValue(digits[2 * i + 1]));
  }
  return out;
}

const std::vector<std::pair<std::string, nvmlGpuFabricState_t>>& States() {
  static const std::vector<std::pair<std::string, nvmlGpuFabricState_t>> names =
      {{"notSupported", NVML_GPU_FABRIC_STATE_NOT_SUPPORTED},
       {"notStarted", NVML_GPU_FABRIC_STATE_NOT_STARTED},
       {"inProgress", NVML_GPU_FABRIC_STATE_IN_PROGRESS},
       {"completed", NVML_GPU_FABRIC_STATE_COMPLETED}};
  return names;
}

const std::vector<std::pair<std::string, unsigned char>>& HealthSummaries() {
  static const std::vector<std::pair<std::string, unsigned char>> names = {
      {"notSupported", NVML_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED},
      {"healthy", NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY},
      {"unhealthy", NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY},
      {"limitedCapacity", NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY}};
  return names;
}

// The probe's outcome: "success" or an NVML error a failed probe reports.
const std::vector<std::pair<std::string, nvmlReturn_t>>& Statuses() {
  static const std::vector<std::pair<std::string, nvmlReturn_t>> names = {
      {"success", NVML_SUCCESS},
      {"notSupported", NVML_ERROR_NOT_SUPPORTED},
      {"timeout", NVML_ERROR_TIMEOUT},
      {"unknown", NVML_ERROR_UNKNOWN}};
  return names;
}

}  // namespace

absl::Status ParseFabric(const Ctx& ctx, const MapView& gpu_map, Gpu* gpu) {
  std::optional<Field> field = gpu_map.Find("fabric");
  if (!field) return absl::OkStatus();
  GPULET_ASSIGN_OR_RETURN(
      MapView map, MapView::Read(ctx, *field,
                                 {"clusterUuid", "cliqueId", "state", "status",
                                  "healthMask", "healthSummary"}));
  GpuFabric fabric;
  GPULET_ASSIGN_OR_RETURN(Field uuid, map.Require("clusterUuid"));
  GPULET_ASSIGN_OR_RETURN(fabric.cluster_uuid, ReadClusterUuid(ctx, uuid));
  GPULET_ASSIGN_OR_RETURN(Field clique, map.Require("cliqueId"));
  GPULET_ASSIGN_OR_RETURN(fabric.clique_id,
                          yaml::ReadUint(ctx, clique, 0, 0xFFFFFFFFu));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "state", &fabric.state,
      [&](const Field& f) { return yaml::ReadEnum(ctx, f, States()); }));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "status", &fabric.status,
      [&](const Field& f) { return yaml::ReadEnum(ctx, f, Statuses()); }));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "healthMask", &fabric.health_mask,
      [&](const Field& f) { return yaml::ReadUint(ctx, f, 0, 0xFFFFFFFFu); }));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "healthSummary", &fabric.health_summary, [&](const Field& f) {
        return yaml::ReadEnum(ctx, f, HealthSummaries());
      }));
  gpu->fabric = fabric;
  return absl::OkStatus();
}

}  // namespace gpulet::sim::parser
