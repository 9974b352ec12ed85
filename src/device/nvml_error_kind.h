// Classifies NVML failures reported through nvml::Library, for the optional
// queries where "this driver or GPU cannot answer" is not an error.
//
// The Library maps NVML codes to absl codes and always names the NVML code in
// the message ("... [NVML_ERROR_NOT_SUPPORTED]"); we look at both so the
// classification does not depend on the exact code mapping.
//
// Thread safety: pure functions.
#pragma once

#include "absl/status/status.h"

namespace gpulet::device {

// True when the call is not available for this driver/GPU: the symbol is
// missing (Unimplemented), NVML_ERROR_NOT_SUPPORTED or
// NVML_ERROR_FUNCTION_NOT_FOUND.
bool IsNvmlUnsupported(const absl::Status& status);

// True for NVML_ERROR_NOT_FOUND (e.g. an empty MIG device slot).
bool IsNvmlNotFound(const absl::Status& status);

// True for NVML_ERROR_NO_PERMISSION.
bool IsNvmlNoPermission(const absl::Status& status);

// True for NVML_ERROR_INVALID_ARGUMENT (e.g. an NVLink number past the GPU's
// last link).
bool IsNvmlInvalidArgument(const absl::Status& status);

// True for NVML_ERROR_GPU_NOT_FOUND; from nvmlInit_v2 it means the driver
// is loaded but the node has no GPUs.
bool IsNvmlGpuNotFound(const absl::Status& status);

}  // namespace gpulet::device
