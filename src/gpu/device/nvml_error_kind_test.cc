#include "src/gpu/device/nvml_error_kind.h"

#include "gtest/gtest.h"
#include "src/base/common/errors.h"
#include "src/gpu/nvml/nvml_status.h"

namespace gpulet::device {
namespace {

absl::Status Nvml(nvmlReturn_t ret) {
  return nvml::NvmlStatus(ret, "nvmlDeviceGetSerial", "GPU 0", "text");
}

TEST(NvmlErrorKindTest, Unsupported) {
  EXPECT_FALSE(IsNvmlUnsupported(absl::OkStatus()));
  EXPECT_TRUE(IsNvmlUnsupported(absl::UnimplementedError("symbol missing")));
  EXPECT_TRUE(IsNvmlUnsupported(Nvml(NVML_ERROR_NOT_SUPPORTED)));
  EXPECT_TRUE(IsNvmlUnsupported(Nvml(NVML_ERROR_FUNCTION_NOT_FOUND)));
  EXPECT_FALSE(IsNvmlUnsupported(Nvml(NVML_ERROR_GPU_IS_LOST)));
  // Mapped to Unimplemented too, but not "unsupported".
  EXPECT_FALSE(IsNvmlUnsupported(Nvml(NVML_ERROR_ARGUMENT_VERSION_MISMATCH)));
}

TEST(NvmlErrorKindTest, NotFoundPrefersTheNvmlCode) {
  EXPECT_TRUE(IsNvmlNotFound(Nvml(NVML_ERROR_NOT_FOUND)));
  EXPECT_TRUE(IsNvmlNotFound(absl::NotFoundError("plain")));
  // A GPU that is not found is not an empty MIG slot.
  EXPECT_FALSE(IsNvmlNotFound(Nvml(NVML_ERROR_GPU_NOT_FOUND)));
  EXPECT_FALSE(IsNvmlNotFound(absl::OkStatus()));
}

TEST(NvmlErrorKindTest, InvalidArgumentAndPermission) {
  EXPECT_TRUE(IsNvmlInvalidArgument(Nvml(NVML_ERROR_INVALID_ARGUMENT)));
  EXPECT_FALSE(IsNvmlInvalidArgument(Nvml(NVML_ERROR_FREQ_NOT_SUPPORTED)));
  EXPECT_TRUE(IsNvmlNoPermission(absl::PermissionDeniedError("denied")));
  EXPECT_TRUE(IsNvmlNoPermission(Nvml(NVML_ERROR_NO_PERMISSION)));
  EXPECT_FALSE(IsNvmlNoPermission(Nvml(NVML_ERROR_OPERATING_SYSTEM)));
}

TEST(NvmlErrorKindTest, GpuNotFound) {
  EXPECT_TRUE(IsNvmlGpuNotFound(Nvml(NVML_ERROR_GPU_NOT_FOUND)));
  EXPECT_FALSE(IsNvmlGpuNotFound(Nvml(NVML_ERROR_NOT_FOUND)));
  EXPECT_FALSE(IsNvmlGpuNotFound(absl::UnavailableError("no payload")));
  EXPECT_FALSE(IsNvmlGpuNotFound(absl::OkStatus()));
}

// The code travels as a payload, through Annotate, and the text of a
// message (a GPU name, a path) can no longer make an error look like
// another: the old classification searched the message.
TEST(NvmlErrorKindTest, TheCodeDecidesNotTheText) {
  absl::Status annotated =
      common::Annotate(Nvml(NVML_ERROR_NOT_SUPPORTED), "discovering GPU 0");
  EXPECT_TRUE(IsNvmlUnsupported(annotated));
  EXPECT_EQ(nvml::NvmlReturnOf(annotated), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_FALSE(IsNvmlUnsupported(absl::FailedPreconditionError(
      "reading /etc/[NVML_ERROR_NOT_SUPPORTED]/x: no such file")));
  EXPECT_FALSE(IsNvmlGpuNotFound(
      absl::InternalError("config names [NVML_ERROR_GPU_NOT_FOUND]")));
  EXPECT_EQ(nvml::NvmlReturnOf(absl::InternalError("x")), std::nullopt);
}

}  // namespace
}  // namespace gpulet::device
