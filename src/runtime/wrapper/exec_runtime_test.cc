#include "src/runtime/wrapper/exec_runtime.h"

#include <sys/stat.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/runtime/testing/test_dir.h"

namespace gpulet::runtime {
namespace {

using ::testing::HasSubstr;

TEST(FindRuntimeTest, PathLookup) {
  testing::TempDir dir;
  const std::string a = dir.Write("a/myrunc", "#!/bin/sh\n");
  const std::string b = dir.Write("b/myrunc", "#!/bin/sh\n");
  chmod(b.c_str(), 0755);  // a/myrunc is not executable
  absl::StatusOr<std::string> found = FindRuntime(
      "myrunc", dir.path() + "/a:" + dir.path() + "/b", "/proc/self/exe");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, b);
  EXPECT_EQ(*FindRuntime(b, "", ""), b);
  EXPECT_THAT(FindRuntime("myrunc", dir.path() + "/a", "").status().message(),
              HasSubstr("runtime \"myrunc\" not found in PATH="));
  EXPECT_THAT(FindRuntime(a, "", "").status().message(),
              HasSubstr("runtime " + a));
}

TEST(FindRuntimeTest, RefusesItself) {
  testing::TempDir dir;
  const std::string self = dir.Write("gpulet-runtime", "x");
  chmod(self.c_str(), 0755);
  absl::StatusOr<std::string> found =
      FindRuntime("gpulet-runtime", dir.path(), self);
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(), HasSubstr("is gpulet-runtime itself"));
}

}  // namespace
}  // namespace gpulet::runtime
