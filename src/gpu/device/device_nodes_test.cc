#include "src/gpu/device/device_nodes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace gpulet::device {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class TempRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories("/tmp/alloc");
    char dir[] = "/tmp/alloc/dnXXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
    std::filesystem::create_directories(root_ +
                                        "/dev/nvidia-caps-imex-channels");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Touch(const std::string& path) { std::ofstream(root_ + path) << ""; }
  // A character device without privileges: a symlink to /dev/null, which
  // stat() follows as the runtime's and NVIDIA's checks do.
  void CharDevice(const std::string& path) {
    std::filesystem::create_symlink("/dev/null", root_ + path);
  }
  std::string root_;
};

struct JoinCase {
  std::string root, path, want;
};

TEST(JoinRootTest, MatchesGoFilepathJoin) {
  for (const JoinCase& c : std::vector<JoinCase>{
           {"/", "/dev/nvidia0", "/dev/nvidia0"},
           {"", "/dev/nvidia0", "/dev/nvidia0"},
           {"/run/nvidia/driver", "/dev/nvidiactl",
            "/run/nvidia/driver/dev/nvidiactl"},
           {"/run/nvidia/driver/", "/dev/nvidiactl",
            "/run/nvidia/driver/dev/nvidiactl"},
           {"//a/./b/", "//dev//x/", "/a/b/dev/x"},
           {"/a/b", "../c", "/a/c"},
           {"/", "../../x", "/x"},
           {"rel", "x", "rel/x"},
           {"rel", "../../x", "../x"},
           {"/a", "", "/a"},
           {"", "", ""},
       }) {
    EXPECT_EQ(JoinRoot(c.root, c.path), c.want) << c.root << " + " << c.path;
  }
}

TEST_F(TempRoot, ControlNodesInNvidiaOrderOnlyIfPresent) {
  EXPECT_THAT(PresentControlNodes(root_), IsEmpty());
  Touch("/dev/nvidia-modeset");
  Touch("/dev/nvidiactl");
  Touch("/dev/nvidia-uvm-tools");
  EXPECT_THAT(PresentControlNodes(root_),
              ElementsAre("/dev/nvidiactl", "/dev/nvidia-uvm-tools",
                          "/dev/nvidia-modeset"));
  Touch("/dev/nvidia-uvm");
  EXPECT_THAT(PresentControlNodes(root_),
              ElementsAre("/dev/nvidiactl", "/dev/nvidia-uvm",
                          "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"));
}

TEST(NodeNamesTest, Format) {
  EXPECT_EQ(GpuDeviceNode(7), "/dev/nvidia7");
  EXPECT_EQ(ImexChannelNode(0), "/dev/nvidia-caps-imex-channels/channel0");
  EXPECT_EQ(ImexChannelNode(2047),
            "/dev/nvidia-caps-imex-channels/channel2047");
}

TEST_F(TempRoot, ImexChannelsMustBeCharacterDevices) {
  CharDevice("/dev/nvidia-caps-imex-channels/channel3");
  Touch("/dev/nvidia-caps-imex-channels/channel1");  // a plain file: no
  absl::StatusOr<std::vector<int>> got =
      PresentImexChannels(root_, {1, 3, 7}, /*required=*/false);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre(3));
}

TEST_F(TempRoot, RequiredMissingImexChannelIsAnErrorNamingIt) {
  CharDevice("/dev/nvidia-caps-imex-channels/channel0");
  absl::StatusOr<std::vector<int>> got =
      PresentImexChannels(root_, {0, 5}, /*required=*/true);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("channel5"));
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr(root_ + "/dev/nvidia-caps-imex-channels/channel5"));
  got = PresentImexChannels(root_, {0}, /*required=*/true);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre(0));
}

}  // namespace
}  // namespace gpulet::device
