// Classifies NVML failures reported through nvml::Library, for the optional
// queries where "this driver or GPU cannot answer" is not an error.
//
// A Status from the Library carries NVML's return code as a typed payload
// (nvml::NvmlReturnOf); that code decides. A Status without one (from
// elsewhere, or a symbol the loader could not find) is classified by its
// absl code. The message text is never searched.
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
