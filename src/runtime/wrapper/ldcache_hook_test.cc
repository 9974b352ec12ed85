#include "src/runtime/wrapper/ldcache_hook.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"
#include "src/base/common/unique_fd.h"
#include "src/runtime/testing/test_dir.h"

namespace gpulet::runtime {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class LdcacheHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("bundle/config.json",
               R"({"root":{"path":"rootfs"},"process":{}})");
    dir_.Write("bundle/rootfs/etc/ld.so.conf.d/keep", "");
    root_ = dir_.path() + "/bundle/rootfs";
  }
  std::string State() const {
    return R"({"ociVersion":"1.0.2","id":"c1","status":"creating",)"
           R"("bundle":")" +
           dir_.path() + R"(/bundle"})";
  }
  absl::Status Write(const std::vector<std::string>& folders) {
    common::UniqueFd root(::open(root_.c_str(), O_PATH | O_DIRECTORY));
    return WriteLdSoConf(root.get(), root_, folders);
  }
  std::string Conf() const { return root_ + kLdSoConfFile; }

  testing::TempDir dir_;
  std::string root_;
};

TEST_F(LdcacheHookTest, FindsTheRootInTheBundle) {
  EXPECT_EQ(*ContainerRootFromState(State()), root_);
}

TEST_F(LdcacheHookTest, WritesTheFoldersIntoLdSoConfD) {
  dir_.Write("bundle/rootfs/etc/ld.so.conf.d/00-gpulet-cdi.conf",
             "an older and longer text than the new one\n");
  ASSERT_TRUE(Write({"/usr/lib/x86_64-linux-gnu", "/opt/lib"}).ok());
  EXPECT_EQ(*common::ReadFile(Conf()), "/usr/lib/x86_64-linux-gnu\n/opt/lib\n");
}

TEST_F(LdcacheHookTest, SymlinksInTheImageAreNotFollowed) {
  fs::create_directories(dir_.path() + "/host-dir");
  fs::remove_all(root_ + "/etc/ld.so.conf.d");
  fs::create_symlink(dir_.path() + "/host-dir", root_ + "/etc/ld.so.conf.d");
  ASSERT_TRUE(Write({"/usr/lib"}).ok());
  fs::remove(root_ + "/etc/ld.so.conf.d");
  fs::rename(root_ + "/etc", root_ + "/etc.real");
  fs::create_symlink(dir_.path() + "/host-dir", root_ + "/etc");
  ASSERT_TRUE(Write({"/usr/lib"}).ok());
  EXPECT_TRUE(fs::is_empty(dir_.path() + "/host-dir"));
}

// A FIFO would block the hook until runc's timeout; a symlink or a device
// node is not something to write to either.
TEST_F(LdcacheHookTest, OnlyARegularFileIsWritten) {
  ASSERT_EQ(::mkfifo(Conf().c_str(), 0644), 0);
  absl::Status fifo = Write({"/usr/lib"});
  EXPECT_THAT(fifo.message(),
              HasSubstr(Conf() + " exists and is not a regular file"));
  fs::remove(Conf());
  fs::create_symlink(dir_.path() + "/target", Conf());
  EXPECT_THAT(Write({"/usr/lib"}).message(), HasSubstr(Conf()));
  EXPECT_FALSE(fs::exists(dir_.path() + "/target"));
  fs::remove(Conf());
  fs::create_directory(Conf());
  EXPECT_THAT(Write({"/usr/lib"}).message(), HasSubstr(Conf()));
}

TEST_F(LdcacheHookTest, ImageWithoutLdSoConfDGetsNoFileButAnEtc) {
  fs::remove_all(root_ + "/etc");
  ASSERT_TRUE(Write({"/usr/lib"}).ok());
  EXPECT_TRUE(fs::is_directory(root_ + "/etc"));
  EXPECT_FALSE(fs::exists(root_ + "/etc/ld.so.conf.d"));
}

TEST_F(LdcacheHookTest, MissingLdconfigIsNotAnError) {
  EXPECT_TRUE(UpdateLdCache(State(), {"/usr/lib"}, dir_.path() + "/none").ok());
}

// A script (or a dynamically linked program) would run code the image
// chooses inside the container's root: it is not run at all.
TEST_F(LdcacheHookTest, LdconfigThatIsNotStaticIsNotRun) {
  const std::string script =
      dir_.Write("ldconfig", "#!/bin/sh\necho ran > " + dir_.path() + "/ran\n");
  ::chmod(script.c_str(), 0755);
  EXPECT_TRUE(UpdateLdCache(State(), {"/usr/lib"}, script).ok());
  EXPECT_FALSE(fs::exists(dir_.path() + "/ran"));
  EXPECT_FALSE(fs::exists(Conf()));
}

TEST_F(LdcacheHookTest, BadState) {
  EXPECT_THAT(ContainerRootFromState("{").status().message(),
              HasSubstr("container state on stdin"));
  EXPECT_THAT(ContainerRootFromState(R"({"id":"x"})").status().message(),
              HasSubstr("bundle missing"));
  EXPECT_THAT(
      ContainerRootFromState(R"({"bundle":"/nonexistent"})").status().message(),
      HasSubstr("/nonexistent/config.json"));
  dir_.Write("bundle/config.json", R"({"root":{"path":"/"},"process":{}})");
  EXPECT_THAT(ContainerRootFromState(State()).status().message(),
              HasSubstr("is not a container root"));
}

}  // namespace
}  // namespace gpulet::runtime
