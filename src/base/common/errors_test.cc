#include "src/base/common/errors.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace gpulet::common {
namespace {

TEST(ErrnoToStatus, MapsCodesAndNamesTheCall) {
  absl::Status s = ErrnoToStatus(ENOENT, "open /x");
  EXPECT_TRUE(absl::IsNotFound(s));
  EXPECT_EQ(s.message(), "open /x: No such file or directory");
  EXPECT_TRUE(absl::IsPermissionDenied(ErrnoToStatus(EACCES, "a")));
  EXPECT_TRUE(absl::IsInvalidArgument(ErrnoToStatus(EINVAL, "a")));
  EXPECT_TRUE(absl::IsInternal(ErrnoToStatus(EIO, "a")));
}

TEST(Annotate, PrefixesErrorsOnly) {
  EXPECT_TRUE(Annotate(absl::OkStatus(), "ctx").ok());
  absl::Status s = Annotate(absl::NotFoundError("gone"), "GPU 3");
  EXPECT_TRUE(absl::IsNotFound(s));
  EXPECT_EQ(s.message(), "GPU 3: gone");
}

}  // namespace
}  // namespace gpulet::common
