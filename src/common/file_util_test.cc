#include "src/common/file_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

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

class WriteAtomicTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuletXXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  int Entries() const {
    int n = 0;
    for ([[maybe_unused]] const auto& e :
         std::filesystem::directory_iterator(dir_)) {
      ++n;
    }
    return n;
  }
  static int OpenFds() {
    int n = 0;
    for ([[maybe_unused]] const auto& e :
         std::filesystem::directory_iterator("/proc/self/fd")) {
      ++n;
    }
    return n;
  }
  std::string dir_;
};

// The temporary file's name cannot be guessed, and nothing planted at the
// names an older version used (<path>.tmp.<pid>) is followed or clobbered.
TEST_F(WriteAtomicTest, APlantedSymlinkIsNeverFollowed) {
  const std::string path = dir_ + "/spec.yaml";
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "precious";
  std::filesystem::create_symlink(
      victim, path + ".tmp." + std::to_string(::getpid()));
  ASSERT_TRUE(WriteFileAtomic(path, "new").ok());
  EXPECT_EQ(*ReadFile(victim), "precious");
  EXPECT_EQ(*ReadFile(path), "new");
  EXPECT_FALSE(std::filesystem::is_symlink(path));
}

TEST_F(WriteAtomicTest, ModeIsAppliedAndNothingIsLeftBehind) {
  const std::string path = dir_ + "/config.json";
  WriteOptions options;
  options.mode = 0600;
  ASSERT_TRUE(WriteFileAtomic(path, "{}", options).ok());
  options.durable = false;
  ASSERT_TRUE(WriteFileAtomic(path, "{ }", options).ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(*ReadFile(path), "{ }");
  EXPECT_EQ(Entries(), 1);
}

// A failing rename (the target is a directory) leaves the target as it
// was, no temporary file and no open descriptor; the error names the path.
TEST_F(WriteAtomicTest, AFailureLeavesNoTemporaryFileAndNoDescriptor) {
  const std::string path = dir_ + "/taken";
  std::filesystem::create_directory(path);
  const int fds = OpenFds();
  absl::Status status = WriteFileAtomic(path, "x");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find(path), std::string::npos) << status;
  EXPECT_TRUE(std::filesystem::is_directory(path));
  EXPECT_EQ(Entries(), 1);
  EXPECT_EQ(OpenFds(), fds);
  status = WriteFileAtomic(dir_ + "/missing/f", "x");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(OpenFds(), fds);
}

}  // namespace
}  // namespace gpulet::common
