#include "src/base/common/file_util.h"

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

// A FIFO planted where a file is expected neither blocks the reader nor is
// read; nor is a device.
TEST(FileUtil, ReadRefusesFifosAndDevices) {
  char tmpl[] = "/tmp/gpuletXXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string fifo = std::string(tmpl) + "/ld.so.conf";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto got = ReadFile(fifo);
  EXPECT_TRUE(absl::IsFailedPrecondition(got.status())) << got.status();
  EXPECT_EQ(got.status().message(), "read " + fifo + ": not a regular file");
  EXPECT_TRUE(absl::IsFailedPrecondition(ReadFile("/dev/zero").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(ReadFile(tmpl).status()));
  std::filesystem::remove_all(tmpl);
}

TEST(FileUtil, ReadIsCapped) {
  char tmpl[] = "/tmp/gpuletXXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/f";
  std::ofstream(path) << std::string(100, 'x');
  EXPECT_EQ(ReadFile(path, 100)->size(), 100u);
  auto got = ReadFile(path, 99);
  EXPECT_TRUE(absl::IsResourceExhausted(got.status())) << got.status();
  EXPECT_EQ(got.status().message(), "read " + path + ": larger than 99 bytes");
  std::filesystem::remove_all(tmpl);
}

// procfs reports size 0 and sysfs 4096 whatever the contents: the bytes
// read are what count.
TEST(FileUtil, ReadsProcAndSysfsFiles) {
  auto status = ReadFile("/proc/self/status");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_NE(status->find("Pid:"), std::string::npos);
  EXPECT_TRUE(
      absl::IsResourceExhausted(ReadFile("/proc/self/status", 8).status()));
  auto online = ReadFile("/sys/devices/system/cpu/online");
  ASSERT_TRUE(online.ok()) << online.status();
  EXPECT_FALSE(online->empty());
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
  std::filesystem::create_symlink(victim,
                                  path + ".tmp." + std::to_string(::getpid()));
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

// A missing directory is named, with the file asked for; the temporary
// file's made-up name is not.
TEST_F(WriteAtomicTest, AMissingDirectoryIsNamed) {
  const std::string path = dir_ + "/missing/f";
  absl::Status status = WriteFileAtomic(path, "x");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "write " + path + ": directory " + dir_ +
                                  "/missing does not exist");
}

}  // namespace
}  // namespace gpulet::common
