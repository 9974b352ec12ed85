#include "src/gpu/device/mig_minors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace gpulet::device {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The shape the driver writes on an A100 with two GPU instances.
constexpr char kA100Minors[] =
    "config 1\n"
    "monitor 2\n"
    "gpu0/gi0/access 3\n"
    "gpu0/gi0/ci0/access 4\n"
    "gpu0/gi1/access 12\n"
    "gpu0/gi1/ci0/access 13\n"
    "gpu0/gi1/ci1/access 14\n"
    "gpu1/gi1/access 147\n"
    "gpu1/gi1/ci0/access 148\n";

TEST(ParseMigMinorsTest, ReadsEveryKindOfLine) {
  MigMinors m = ParseMigMinors(kA100Minors);
  EXPECT_EQ(m.config, 1u);
  EXPECT_EQ(m.monitor, 2u);
  EXPECT_EQ(m.gpu_instances.size(), 3u);
  EXPECT_EQ(m.compute_instances.size(), 4u);
  EXPECT_EQ(m.gpu_instances.at({0, 1}), 12u);
  EXPECT_EQ(m.compute_instances.at({0, 1, 1}), 14u);
  EXPECT_EQ(m.gpu_instances.at({1, 1}), 147u);
  EXPECT_TRUE(m.skipped_lines.empty());
}

TEST(ParseMigMinorsTest, EmptyTextIsEmpty) {
  EXPECT_EQ(ParseMigMinors(""), MigMinors{});
  EXPECT_EQ(ParseMigMinors("\n\n  \n"), MigMinors{});
}

TEST(ParseMigMinorsTest, ToleratesBlanksAndCrLf) {
  MigMinors m =
      ParseMigMinors("  gpu2/gi3/access\t 40 \r\ngpu2/gi3/ci0/access 41");
  EXPECT_EQ(m.gpu_instances.at({2, 3}), 40u);
  EXPECT_EQ(m.compute_instances.at({2, 3, 0}), 41u);
  EXPECT_TRUE(m.skipped_lines.empty());
}

TEST(ParseMigMinorsTest, SkipsLinesInNoKnownForm) {
  MigMinors m = ParseMigMinors(
      "gpu0/gi1/access 12\n"
      "fabric-imex-mgmt 4095\n"
      "gpu0/gi1/access\n"
      "gpu0/gi1/access x\n"
      "gpu0/gi1/access 12 13\n"
      "gpu0/gi1/ci/access 5\n"
      "gpu0/gi1/ci0/acces 5\n"
      "gpuX/gi1/access 5\n"
      "gpu0/gi-1/access 5\n");
  EXPECT_EQ(m.gpu_instances.size(), 1u);
  EXPECT_TRUE(m.compute_instances.empty());
  EXPECT_EQ(m.skipped_lines.size(), 8u);
  EXPECT_EQ(m.skipped_lines[0], "fabric-imex-mgmt 4095");
}

TEST(ParseMigMinorsTest, LaterLineWins) {
  MigMinors m = ParseMigMinors("gpu0/gi1/access 12\ngpu0/gi1/access 20\n");
  EXPECT_EQ(m.gpu_instances.at({0, 1}), 20u);
}

TEST(MigCapNodesTest, GiThenCi) {
  MigMinors m = ParseMigMinors(kA100Minors);
  absl::StatusOr<std::vector<std::string>> nodes = MigCapNodes(m, 0, 1, 1);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_THAT(*nodes, ElementsAre("/dev/nvidia-caps/nvidia-cap12",
                                  "/dev/nvidia-caps/nvidia-cap14"));
}

TEST(MigCapNodesTest, MissingGiOrCiIsNotFoundNamingIt) {
  MigMinors m = ParseMigMinors(kA100Minors);
  absl::StatusOr<std::vector<std::string>> gi = MigCapNodes(m, 0, 7, 0);
  EXPECT_EQ(gi.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(gi.status().message()), HasSubstr("gpu0/gi7/access"));
  absl::StatusOr<std::vector<std::string>> ci = MigCapNodes(m, 1, 1, 2);
  EXPECT_EQ(ci.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(ci.status().message()),
              HasSubstr("gpu1/gi1/ci2/access"));
}

TEST(MigDeviceNodesTest, ParentNodeByMinorThenCaps) {
  MigMinors m = ParseMigMinors(kA100Minors);
  Gpu parent;
  parent.index = 5;  // the minor, not the index, keys mig-minors
  parent.minor = 1;
  MigDevice mig;
  mig.uuid = "MIG-x";
  mig.gpu_instance_id = 1;
  mig.compute_instance_id = 0;
  absl::StatusOr<std::vector<std::string>> nodes =
      MigDeviceNodes(m, parent, mig);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_THAT(*nodes,
              ElementsAre("/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap147",
                          "/dev/nvidia-caps/nvidia-cap148"));
  mig.compute_instance_id = 9;
  nodes = MigDeviceNodes(m, parent, mig);
  EXPECT_EQ(nodes.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(nodes.status().message()), HasSubstr("MIG-x"));
}

TEST(LoadMigMinorsTest, ReadsUnderRootAndReportsMissingFile) {
  std::filesystem::create_directories("/tmp/alloc");
  char dir[] = "/tmp/alloc/mmXXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string root = dir;
  absl::StatusOr<MigMinors> missing = LoadMigMinors(root);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("/proc/driver/nvidia-caps/mig-minors"));

  std::filesystem::create_directories(root + "/proc/driver/nvidia-caps");
  std::ofstream(root + "/proc/driver/nvidia-caps/mig-minors") << kA100Minors;
  absl::StatusOr<MigMinors> loaded = LoadMigMinors(root);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, ParseMigMinors(kA100Minors));
  std::filesystem::remove_all(root);
}

TEST(NvidiaCapNodeTest, Format) {
  EXPECT_EQ(NvidiaCapNode(0), "/dev/nvidia-caps/nvidia-cap0");
  EXPECT_EQ(NvidiaCapNode(4095), "/dev/nvidia-caps/nvidia-cap4095");
}

}  // namespace
}  // namespace gpulet::device
