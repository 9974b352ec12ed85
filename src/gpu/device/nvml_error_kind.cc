#include "src/gpu/device/nvml_error_kind.h"

#include <optional>

#include "src/gpu/nvml/nvml_status.h"

namespace gpulet::device {
namespace {

// The NVML code when the Status came from NVML; else the absl code decides.
bool Is(const absl::Status& status, std::initializer_list<nvmlReturn_t> codes,
        absl::StatusCode fallback) {
  if (status.ok()) return false;
  std::optional<nvmlReturn_t> ret = nvml::NvmlReturnOf(status);
  if (!ret.has_value()) return status.code() == fallback;
  for (nvmlReturn_t code : codes) {
    if (*ret == code) return true;
  }
  return false;
}

}  // namespace

bool IsNvmlUnsupported(const absl::Status& status) {
  return Is(status, {NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND},
            absl::StatusCode::kUnimplemented);
}

bool IsNvmlNotFound(const absl::Status& status) {
  return Is(status, {NVML_ERROR_NOT_FOUND}, absl::StatusCode::kNotFound);
}

bool IsNvmlNoPermission(const absl::Status& status) {
  return Is(status, {NVML_ERROR_NO_PERMISSION},
            absl::StatusCode::kPermissionDenied);
}

bool IsNvmlGpuNotFound(const absl::Status& status) {
  // Only NVML says this; another source's Unavailable is not "no GPU".
  std::optional<nvmlReturn_t> ret = nvml::NvmlReturnOf(status);
  return ret.has_value() && *ret == NVML_ERROR_GPU_NOT_FOUND;
}

bool IsNvmlInvalidArgument(const absl::Status& status) {
  return Is(status, {NVML_ERROR_INVALID_ARGUMENT},
            absl::StatusCode::kInvalidArgument);
}

}  // namespace gpulet::device
