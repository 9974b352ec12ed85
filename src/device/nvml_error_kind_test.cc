#include "src/device/nvml_error_kind.h"

#include "gtest/gtest.h"

namespace gpulet::device {
namespace {

TEST(NvmlErrorKindTest, Unsupported) {
  EXPECT_FALSE(IsNvmlUnsupported(absl::OkStatus()));
  EXPECT_TRUE(IsNvmlUnsupported(absl::UnimplementedError("symbol missing")));
  EXPECT_TRUE(IsNvmlUnsupported(absl::FailedPreconditionError(
      "nvmlDeviceGetSerial(GPU 0): Not Supported [NVML_ERROR_NOT_SUPPORTED]")));
  EXPECT_FALSE(IsNvmlUnsupported(absl::UnavailableError(
      "nvmlDeviceGetSerial(GPU 0): GPU is lost [NVML_ERROR_GPU_IS_LOST]")));
}

TEST(NvmlErrorKindTest, NotFoundPrefersTheNvmlCode) {
  EXPECT_TRUE(IsNvmlNotFound(absl::NotFoundError(
      "nvmlDeviceGetMigDeviceHandleByIndex(GPU 0): Not Found "
      "[NVML_ERROR_NOT_FOUND]")));
  EXPECT_TRUE(IsNvmlNotFound(absl::NotFoundError("plain")));
  // A not-found library file is not an empty MIG slot.
  EXPECT_FALSE(IsNvmlNotFound(absl::NotFoundError(
      "nvmlDeviceGetMigDeviceHandleByIndex(GPU 0): GPU not found "
      "[NVML_ERROR_GPU_NOT_FOUND]")));
  EXPECT_FALSE(IsNvmlNotFound(absl::OkStatus()));
}

TEST(NvmlErrorKindTest, InvalidArgumentAndPermission) {
  EXPECT_TRUE(IsNvmlInvalidArgument(absl::InvalidArgumentError(
      "nvmlDeviceGetNvLinkState(GPU 0): Invalid Argument "
      "[NVML_ERROR_INVALID_ARGUMENT]")));
  EXPECT_FALSE(IsNvmlInvalidArgument(
      absl::InvalidArgumentError("x [NVML_ERROR_NOT_SUPPORTED]")));
  EXPECT_TRUE(IsNvmlNoPermission(absl::PermissionDeniedError("denied")));
  EXPECT_TRUE(
      IsNvmlNoPermission(absl::InternalError("x [NVML_ERROR_NO_PERMISSION]")));
}

TEST(NvmlErrorKindTest, GpuNotFound) {
  EXPECT_TRUE(IsNvmlGpuNotFound(absl::UnavailableError(
      "nvmlInit_v2: No supported GPUs were found [NVML_ERROR_GPU_NOT_FOUND]")));
  EXPECT_FALSE(
      IsNvmlGpuNotFound(absl::NotFoundError("x [NVML_ERROR_NOT_FOUND]")));
  EXPECT_FALSE(IsNvmlGpuNotFound(absl::OkStatus()));
}

}  // namespace
}  // namespace gpulet::device
