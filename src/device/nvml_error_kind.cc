#include "src/device/nvml_error_kind.h"

#include "absl/strings/match.h"

namespace gpulet::device {

bool IsNvmlUnsupported(const absl::Status& status) {
  if (status.ok()) return false;
  return status.code() == absl::StatusCode::kUnimplemented ||
         absl::StrContains(status.message(), "NVML_ERROR_NOT_SUPPORTED") ||
         absl::StrContains(status.message(), "NVML_ERROR_FUNCTION_NOT_FOUND");
}

bool IsNvmlNotFound(const absl::Status& status) {
  if (status.ok()) return false;
  if (absl::StrContains(status.message(), "[NVML_ERROR_")) {
    return absl::StrContains(status.message(), "[NVML_ERROR_NOT_FOUND]");
  }
  return status.code() == absl::StatusCode::kNotFound;
}

bool IsNvmlNoPermission(const absl::Status& status) {
  if (status.ok()) return false;
  return status.code() == absl::StatusCode::kPermissionDenied ||
         absl::StrContains(status.message(), "NVML_ERROR_NO_PERMISSION");
}

bool IsNvmlGpuNotFound(const absl::Status& status) {
  return !status.ok() &&
         absl::StrContains(status.message(), "[NVML_ERROR_GPU_NOT_FOUND]");
}

bool IsNvmlInvalidArgument(const absl::Status& status) {
  if (status.ok()) return false;
  if (absl::StrContains(status.message(), "[NVML_ERROR_")) {
    return absl::StrContains(status.message(), "[NVML_ERROR_INVALID_ARGUMENT]");
  }
  return status.code() == absl::StatusCode::kInvalidArgument;
}

}  // namespace gpulet::device
