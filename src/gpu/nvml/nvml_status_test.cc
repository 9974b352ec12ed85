#include "src/gpu/nvml/nvml_status.h"

#include <string>

#include "gtest/gtest.h"

namespace gpulet::nvml {
namespace {

using Code = absl::StatusCode;

struct CodeCase {
  nvmlReturn_t ret;
  Code code;
  const char* name;
};

class NvmlReturnMapping : public testing::TestWithParam<CodeCase> {};

TEST_P(NvmlReturnMapping, CodeAndName) {
  const CodeCase& c = GetParam();
  EXPECT_EQ(NvmlReturnCode(c.ret), c.code) << c.name;
  EXPECT_STREQ(NvmlReturnName(c.ret), c.name);
}

INSTANTIATE_TEST_SUITE_P(
    EveryNvmlReturn, NvmlReturnMapping,
    testing::Values(
        CodeCase{NVML_SUCCESS, Code::kOk, "NVML_SUCCESS"},
        CodeCase{NVML_ERROR_UNINITIALIZED, Code::kFailedPrecondition,
                 "NVML_ERROR_UNINITIALIZED"},
        CodeCase{NVML_ERROR_INVALID_ARGUMENT, Code::kInvalidArgument,
                 "NVML_ERROR_INVALID_ARGUMENT"},
        CodeCase{NVML_ERROR_NOT_SUPPORTED, Code::kUnimplemented,
                 "NVML_ERROR_NOT_SUPPORTED"},
        CodeCase{NVML_ERROR_NO_PERMISSION, Code::kPermissionDenied,
                 "NVML_ERROR_NO_PERMISSION"},
        CodeCase{NVML_ERROR_ALREADY_INITIALIZED, Code::kFailedPrecondition,
                 "NVML_ERROR_ALREADY_INITIALIZED"},
        CodeCase{NVML_ERROR_NOT_FOUND, Code::kNotFound, "NVML_ERROR_NOT_FOUND"},
        CodeCase{NVML_ERROR_INSUFFICIENT_SIZE, Code::kOutOfRange,
                 "NVML_ERROR_INSUFFICIENT_SIZE"},
        CodeCase{NVML_ERROR_INSUFFICIENT_POWER, Code::kFailedPrecondition,
                 "NVML_ERROR_INSUFFICIENT_POWER"},
        CodeCase{NVML_ERROR_DRIVER_NOT_LOADED, Code::kFailedPrecondition,
                 "NVML_ERROR_DRIVER_NOT_LOADED"},
        CodeCase{NVML_ERROR_TIMEOUT, Code::kDeadlineExceeded,
                 "NVML_ERROR_TIMEOUT"},
        CodeCase{NVML_ERROR_IRQ_ISSUE, Code::kUnavailable,
                 "NVML_ERROR_IRQ_ISSUE"},
        CodeCase{NVML_ERROR_LIBRARY_NOT_FOUND, Code::kFailedPrecondition,
                 "NVML_ERROR_LIBRARY_NOT_FOUND"},
        CodeCase{NVML_ERROR_FUNCTION_NOT_FOUND, Code::kUnimplemented,
                 "NVML_ERROR_FUNCTION_NOT_FOUND"},
        CodeCase{NVML_ERROR_CORRUPTED_INFOROM, Code::kDataLoss,
                 "NVML_ERROR_CORRUPTED_INFOROM"},
        CodeCase{NVML_ERROR_GPU_IS_LOST, Code::kUnavailable,
                 "NVML_ERROR_GPU_IS_LOST"},
        CodeCase{NVML_ERROR_RESET_REQUIRED, Code::kUnavailable,
                 "NVML_ERROR_RESET_REQUIRED"},
        CodeCase{NVML_ERROR_OPERATING_SYSTEM, Code::kPermissionDenied,
                 "NVML_ERROR_OPERATING_SYSTEM"},
        CodeCase{NVML_ERROR_LIB_RM_VERSION_MISMATCH, Code::kFailedPrecondition,
                 "NVML_ERROR_LIB_RM_VERSION_MISMATCH"},
        CodeCase{NVML_ERROR_IN_USE, Code::kFailedPrecondition,
                 "NVML_ERROR_IN_USE"},
        CodeCase{NVML_ERROR_MEMORY, Code::kResourceExhausted,
                 "NVML_ERROR_MEMORY"},
        CodeCase{NVML_ERROR_NO_DATA, Code::kNotFound, "NVML_ERROR_NO_DATA"},
        CodeCase{NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, Code::kFailedPrecondition,
                 "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED"},
        CodeCase{NVML_ERROR_INSUFFICIENT_RESOURCES, Code::kResourceExhausted,
                 "NVML_ERROR_INSUFFICIENT_RESOURCES"},
        CodeCase{NVML_ERROR_FREQ_NOT_SUPPORTED, Code::kInvalidArgument,
                 "NVML_ERROR_FREQ_NOT_SUPPORTED"},
        CodeCase{NVML_ERROR_ARGUMENT_VERSION_MISMATCH, Code::kUnimplemented,
                 "NVML_ERROR_ARGUMENT_VERSION_MISMATCH"},
        CodeCase{NVML_ERROR_DEPRECATED, Code::kUnimplemented,
                 "NVML_ERROR_DEPRECATED"},
        CodeCase{NVML_ERROR_NOT_READY, Code::kUnavailable,
                 "NVML_ERROR_NOT_READY"},
        CodeCase{NVML_ERROR_GPU_NOT_FOUND, Code::kUnavailable,
                 "NVML_ERROR_GPU_NOT_FOUND"},
        CodeCase{NVML_ERROR_INVALID_STATE, Code::kFailedPrecondition,
                 "NVML_ERROR_INVALID_STATE"},
        CodeCase{NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, Code::kUnimplemented,
                 "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED"},
        CodeCase{NVML_ERROR_UNKNOWN, Code::kInternal, "NVML_ERROR_UNKNOWN"},
        // A code from a driver newer than nvml_api.h.
        CodeCase{static_cast<nvmlReturn_t>(42), Code::kUnknown,
                 "NVML_ERROR_UNRECOGNIZED"}));

struct MessageCase {
  nvmlReturn_t ret;
  const char* function;
  const char* device;
  const char* error_string;
  const char* message;
};

class NvmlStatusMessage : public testing::TestWithParam<MessageCase> {};

TEST_P(NvmlStatusMessage, Format) {
  const MessageCase& c = GetParam();
  const absl::Status status =
      NvmlStatus(c.ret, c.function, c.device, c.error_string);
  EXPECT_EQ(status.message(), c.message);
  EXPECT_EQ(status.code(), NvmlReturnCode(c.ret));
}

INSTANTIATE_TEST_SUITE_P(
    Messages, NvmlStatusMessage,
    testing::Values(
        MessageCase{NVML_ERROR_GPU_IS_LOST, "nvmlDeviceGetMemoryInfo", "GPU 3",
                    "GPU is lost",
                    "nvmlDeviceGetMemoryInfo(GPU 3): GPU is lost "
                    "[NVML_ERROR_GPU_IS_LOST]"},
        MessageCase{NVML_ERROR_DRIVER_NOT_LOADED, "nvmlInit_v2", "",
                    "Driver Not Loaded",
                    "nvmlInit_v2: Driver Not Loaded "
                    "[NVML_ERROR_DRIVER_NOT_LOADED]"},
        MessageCase{NVML_ERROR_NOT_FOUND, "nvmlDeviceGetHandleByUUID",
                    "GPU-00000000-dead-beef-0000-000000000000", "Not Found",
                    "nvmlDeviceGetHandleByUUID(GPU-00000000-dead-beef-0000-"
                    "000000000000): Not Found [NVML_ERROR_NOT_FOUND]"},
        MessageCase{NVML_ERROR_TIMEOUT, "nvmlEventSetWait_v2", "", "",
                    "nvmlEventSetWait_v2: [NVML_ERROR_TIMEOUT]"},
        MessageCase{static_cast<nvmlReturn_t>(77), "nvmlDeviceGetName", "GPU 0",
                    "Unknown Error",
                    "nvmlDeviceGetName(GPU 0): Unknown Error "
                    "[NVML_ERROR_UNRECOGNIZED 77]"}));

TEST(NvmlStatus, SuccessIsOk) {
  EXPECT_TRUE(NvmlStatus(NVML_SUCCESS, "nvmlInit_v2", "", "Success").ok());
}

}  // namespace
}  // namespace gpulet::nvml
