#include "src/gpu/nvml/nvml_status.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpulet::nvml {

const char* NvmlReturnName(nvmlReturn_t ret) {
  switch (ret) {
#define GPULET_NVML_RETURN_NAME(e) \
  case e:                          \
    return #e;
    GPULET_NVML_RETURN_NAME(NVML_SUCCESS)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_UNINITIALIZED)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_INVALID_ARGUMENT)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_NOT_SUPPORTED)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_NO_PERMISSION)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_ALREADY_INITIALIZED)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_NOT_FOUND)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_INSUFFICIENT_SIZE)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_INSUFFICIENT_POWER)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_DRIVER_NOT_LOADED)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_TIMEOUT)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_IRQ_ISSUE)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_LIBRARY_NOT_FOUND)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_FUNCTION_NOT_FOUND)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_CORRUPTED_INFOROM)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_GPU_IS_LOST)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_RESET_REQUIRED)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_OPERATING_SYSTEM)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_LIB_RM_VERSION_MISMATCH)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_IN_USE)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_MEMORY)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_NO_DATA)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_VGPU_ECC_NOT_SUPPORTED)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_INSUFFICIENT_RESOURCES)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_FREQ_NOT_SUPPORTED)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_DEPRECATED)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_NOT_READY)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_GPU_NOT_FOUND)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_INVALID_STATE)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_RESET_TYPE_NOT_SUPPORTED)
    GPULET_NVML_RETURN_NAME(NVML_ERROR_UNKNOWN)
#undef GPULET_NVML_RETURN_NAME
  }
  return "NVML_ERROR_UNRECOGNIZED";
}

absl::StatusCode NvmlReturnCode(nvmlReturn_t ret) {
  using Code = absl::StatusCode;
  switch (ret) {
    case NVML_SUCCESS:
      return Code::kOk;
    case NVML_ERROR_NOT_FOUND:
    case NVML_ERROR_NO_DATA:
      return Code::kNotFound;
    case NVML_ERROR_INVALID_ARGUMENT:
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
      return Code::kInvalidArgument;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_DEPRECATED:
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
    case NVML_ERROR_RESET_TYPE_NOT_SUPPORTED:
      return Code::kUnimplemented;
    case NVML_ERROR_UNINITIALIZED:
    case NVML_ERROR_ALREADY_INITIALIZED:
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIBRARY_NOT_FOUND:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
    case NVML_ERROR_INSUFFICIENT_POWER:
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
    case NVML_ERROR_INVALID_STATE:
    case NVML_ERROR_IN_USE:
      return Code::kFailedPrecondition;
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_GPU_NOT_FOUND:
    case NVML_ERROR_RESET_REQUIRED:
    case NVML_ERROR_IRQ_ISSUE:
    case NVML_ERROR_NOT_READY:
      return Code::kUnavailable;
    case NVML_ERROR_TIMEOUT:
      return Code::kDeadlineExceeded;
    case NVML_ERROR_NO_PERMISSION:
    case NVML_ERROR_OPERATING_SYSTEM:
      return Code::kPermissionDenied;
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return Code::kOutOfRange;
    case NVML_ERROR_MEMORY:
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return Code::kResourceExhausted;
    case NVML_ERROR_CORRUPTED_INFOROM:
      return Code::kDataLoss;
    case NVML_ERROR_UNKNOWN:
      return Code::kInternal;
  }
  return Code::kUnknown;
}

absl::Status NvmlStatus(nvmlReturn_t ret, absl::string_view function,
                        absl::string_view device_desc,
                        absl::string_view error_string) {
  if (ret == NVML_SUCCESS) return absl::OkStatus();
  std::string message(function);
  if (!device_desc.empty()) absl::StrAppend(&message, "(", device_desc, ")");
  absl::StrAppend(&message, ":");
  if (!error_string.empty()) absl::StrAppend(&message, " ", error_string);
  const char* name = NvmlReturnName(ret);
  if (NvmlReturnCode(ret) == absl::StatusCode::kUnknown) {
    // Keep the number: a newer driver's code is only useful if we can see it.
    absl::StrAppend(&message, " [", name, " ", static_cast<int>(ret), "]");
  } else {
    absl::StrAppend(&message, " [", name, "]");
  }
  absl::Status status(NvmlReturnCode(ret), message);
  status.SetPayload(kNvmlReturnPayload,
                    absl::Cord(absl::StrCat(static_cast<int>(ret))));
  return status;
}

std::optional<nvmlReturn_t> NvmlReturnOf(const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  absl::optional<absl::Cord> payload = status.GetPayload(kNvmlReturnPayload);
  int value = 0;
  if (!payload.has_value() ||
      !absl::SimpleAtoi(std::string(*payload), &value)) {
    return std::nullopt;
  }
  return static_cast<nvmlReturn_t>(value);
}

}  // namespace gpulet::nvml
