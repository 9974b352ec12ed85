#include "src/runtime/ldcache_hook.h"

#include <sys/stat.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/common/file_util.h"
#include "src/runtime/test_dir.h"

namespace gpulet::runtime {
namespace {

using ::testing::HasSubstr;

class LdcacheHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("bundle/config.json",
               R"({"root":{"path":"rootfs"},"process":{}})");
    dir_.Write("bundle/rootfs/etc/ld.so.conf.d/keep", "");
    // Records its arguments instead of building a cache.
    ldconfig_ = dir_.Write(
        "ldconfig", "#!/bin/sh\necho \"$@\" > " + dir_.path() + "/args\n");
    chmod(ldconfig_.c_str(), 0755);
  }
  std::string State() const {
    return R"({"ociVersion":"1.0.2","id":"c1","status":"creating",)"
           R"("bundle":")" +
           dir_.path() + R"(/bundle"})";
  }

  testing::TempDir dir_;
  std::string ldconfig_;
};

TEST_F(LdcacheHookTest, RunsLdconfigInTheContainerRoot) {
  const std::string root = dir_.path() + "/bundle/rootfs";
  EXPECT_EQ(*ContainerRootFromState(State()), root);
  ASSERT_TRUE(UpdateLdCache(State(), {"/usr/lib/x86_64-linux-gnu", "/opt/lib"},
                            ldconfig_)
                  .ok());
  EXPECT_EQ(*common::ReadFile(dir_.path() + "/args"),
            "-r " + root + " /usr/lib/x86_64-linux-gnu /opt/lib\n");
  EXPECT_EQ(*common::ReadFile(root + "/etc/ld.so.conf.d/00-gpulet-cdi.conf"),
            "/usr/lib/x86_64-linux-gnu\n/opt/lib\n");
}

TEST_F(LdcacheHookTest, SymlinksInTheImageAreNotFollowed) {
  const std::string root = dir_.path() + "/bundle/rootfs";
  std::filesystem::remove_all(root + "/etc/ld.so.conf.d");
  std::filesystem::create_directories(dir_.path() + "/host-dir");
  std::filesystem::create_symlink(dir_.path() + "/host-dir",
                                  root + "/etc/ld.so.conf.d");
  ASSERT_TRUE(UpdateLdCache(State(), {"/usr/lib"}, ldconfig_).ok());
  EXPECT_FALSE(
      std::filesystem::exists(dir_.path() + "/host-dir/00-gpulet-cdi.conf"));
}

TEST_F(LdcacheHookTest, RootfsWithoutEtcGetsOne) {
  const std::string root = dir_.path() + "/bundle/rootfs";
  std::filesystem::remove_all(root + "/etc");
  ASSERT_TRUE(UpdateLdCache(State(), {"/usr/lib"}, ldconfig_).ok());
  EXPECT_TRUE(std::filesystem::is_directory(root + "/etc"));
}

TEST_F(LdcacheHookTest, MissingLdconfigIsNotAnError) {
  EXPECT_TRUE(UpdateLdCache(State(), {"/usr/lib"}, dir_.path() + "/none").ok());
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
