// The one place an nvmlReturn_t becomes an absl::Status.
//
// Message form, naming the call, the device and NVML's own code:
//   "nvmlDeviceGetMemoryInfo_v2(GPU 3): GPU is lost [NVML_ERROR_GPU_IS_LOST]"
//   "nvmlInit_v2: Driver Not Loaded [NVML_ERROR_DRIVER_NOT_LOADED]"
//
// Code mapping (chosen so callers can act on the code alone):
//   NOT_FOUND, NO_DATA                          -> NotFound
//   INVALID_ARGUMENT, FREQ_NOT_SUPPORTED        -> InvalidArgument
//   NOT_SUPPORTED, FUNCTION_NOT_FOUND, DEPRECATED,
//   ARGUMENT_VERSION_MISMATCH, RESET_TYPE_NOT_SUPPORTED -> Unimplemented
//   UNINITIALIZED, ALREADY_INITIALIZED, DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND,
//   LIB_RM_VERSION_MISMATCH, INSUFFICIENT_POWER, VGPU_ECC_NOT_SUPPORTED,
//   INVALID_STATE, IN_USE                       -> FailedPrecondition
//   GPU_IS_LOST, GPU_NOT_FOUND, RESET_REQUIRED, IRQ_ISSUE, NOT_READY
//                                               -> Unavailable
//   TIMEOUT                                     -> DeadlineExceeded
//   NO_PERMISSION, OPERATING_SYSTEM (cgroups)   -> PermissionDenied
//   INSUFFICIENT_SIZE                           -> OutOfRange
//   MEMORY, INSUFFICIENT_RESOURCES              -> ResourceExhausted
//   CORRUPTED_INFOROM                           -> DataLoss
//   UNKNOWN ("internal driver error")           -> Internal
//   anything unrecognised                       -> Unknown
// IN_USE is FailedPrecondition, not Unavailable: the GPU stays busy until
// another process lets go of it, so a blind retry loop would not help.
// Unavailable is reserved for "this device is (perhaps temporarily) gone",
// which the health layer treats as unhealthy.
//
// Thread safety: pure functions.
// Every such Status also carries NVML's return code as a typed payload
// (NvmlReturnOf), so callers classify failures by the code itself, never by
// searching the message text; common::Annotate keeps payloads.
#pragma once

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::nvml {

// NVML's enumerator name, e.g. "NVML_ERROR_GPU_IS_LOST";
// "NVML_ERROR_UNRECOGNIZED" for a value this header does not know.
const char* NvmlReturnName(nvmlReturn_t ret);

// The absl code for `ret` (kOk for NVML_SUCCESS), per the table above.
absl::StatusCode NvmlReturnCode(nvmlReturn_t ret);

// OK for NVML_SUCCESS, else "<function>(<device_desc>): <error_string>
// [<name>]". An empty device_desc drops the parentheses; an empty
// error_string (nvmlErrorString unavailable) drops that part.
absl::Status NvmlStatus(nvmlReturn_t ret, absl::string_view function,
                        absl::string_view device_desc,
                        absl::string_view error_string);

// The payload's type URL.
inline constexpr char kNvmlReturnPayload[] = "type.gpulet.dev/nvml.return";

// The NVML return code a Status made by NvmlStatus carries; nullopt for any
// other Status (OK included).
std::optional<nvmlReturn_t> NvmlReturnOf(const absl::Status& status);

}  // namespace gpulet::nvml
