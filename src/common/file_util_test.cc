#include "src/common/file_util.h"

#include <cstdlib>
#include <filesystem>

#include "gtest/gtest.h"

namespace gpulet::common {
namespace {

TEST(FileUtil, WriteAtomicThenRead) {
  char tmpl[] = "/tmp/gpuletXXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string path = std::string(tmpl) + "/f";
  ASSERT_TRUE(WriteFileAtomic(path, "abc").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "defg").ok());
  auto got = ReadFile(path);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "defg");
  std::filesystem::remove_all(tmpl);
}

TEST(FileUtil, ReadMissingNamesPath) {
  auto got = ReadFile("/nonexistent/gpulet/x");
  EXPECT_TRUE(absl::IsNotFound(got.status()));
  EXPECT_NE(got.status().message().find("/nonexistent/gpulet/x"),
            std::string::npos);
}

}  // namespace
}  // namespace gpulet::common
