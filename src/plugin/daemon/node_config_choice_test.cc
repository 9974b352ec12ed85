#include "src/plugin/daemon/node_config_choice.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/model/testing/test_root.h"
#include "src/plugin/daemon/node_config_watch.h"

namespace gpulet::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

NodeConfigOptions Options() {
  NodeConfigOptions o;
  o.dir = "/configs";
  o.node_name = "n1";
  return o;
}

TEST(NodeConfigChoiceTest, TheLabelNamesTheConfiguration) {
  absl::StatusOr<NodeConfigChoice> c =
      ChooseNodeConfig(Options(), "mig", {"default", "mig", "ts"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->name, "mig");
  EXPECT_EQ(c->file, "/configs/mig");
}

TEST(NodeConfigChoiceTest, ALabelNamingNoConfigurationIsAnErrorNotAFallback) {
  absl::StatusOr<NodeConfigChoice> c =
      ChooseNodeConfig(Options(), "missing", {"default", "ts"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(c.status().message(),
              HasSubstr("nvidia.com/device-plugin.config=missing"));
  EXPECT_THAT(c.status().message(), HasSubstr("[default, ts]"));
  // A label is never a path.
  for (const char* bad : {"../etc/passwd", ".hidden", "a/b", ".."}) {
    EXPECT_FALSE(ChooseNodeConfig(Options(), bad, {"default"}).ok()) << bad;
  }
}

TEST(NodeConfigChoiceTest, WithoutTheLabelTheDefault) {
  NodeConfigOptions o = Options();
  o.default_name = "ts";
  absl::StatusOr<NodeConfigChoice> c =
      ChooseNodeConfig(o, std::nullopt, {"default", "ts"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->name, "ts");
  c = ChooseNodeConfig(o, std::nullopt, {"default"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("--default-config ts"));
}

TEST(NodeConfigChoiceTest, FallbacksInOrder) {
  NodeConfigOptions o = Options();  // named, single
  EXPECT_EQ(ChooseNodeConfig(o, std::nullopt, {"a", "default"})->name,
            "default");
  EXPECT_EQ(ChooseNodeConfig(o, std::nullopt, {"only"})->name, "only");
  absl::StatusOr<NodeConfigChoice> c =
      ChooseNodeConfig(o, std::nullopt, {"a", "b"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(c.status().message(), HasSubstr("named,single"));
  o.fallbacks = {kFallbackSingle, kFallbackEmpty};
  c = ChooseNodeConfig(o, std::nullopt, {"a", "default"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, NodeConfigChoice{});  // no file
}

TEST(NodeConfigChoiceTest, ValidatesTheOptions) {
  NodeConfigOptions o = Options();
  EXPECT_TRUE(ValidateNodeConfigOptions(o).ok());
  o.fallbacks = {"named", "first"};
  EXPECT_THAT(ValidateNodeConfigOptions(o).message(),
              HasSubstr("--fallback-strategies: unknown strategy \"first\""));
  o = Options();
  o.node_name.clear();
  EXPECT_THAT(ValidateNodeConfigOptions(o).message(), HasSubstr("NODE_NAME"));
  o = Options();
  o.default_name = "../x";
  EXPECT_THAT(ValidateNodeConfigOptions(o).message(),
              HasSubstr("--default-config"));
  o.dir.clear();  // off: nothing to check
  EXPECT_TRUE(ValidateNodeConfigOptions(o).ok());
}

// A ConfigMap volume: the keys are symbolic links into ..data, itself a
// link to a timestamped directory.
TEST(NodeConfigChoiceTest, ListsAConfigMapVolumesKeys) {
  cdi::testing::TempRoot tmp;
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(tmp.path()) / "configs";
  fs::create_directories(dir / "..2026_11_29_10_00_00.1");
  for (const char* key : {"ts", "default"}) {
    std::ofstream(dir / "..2026_11_29_10_00_00.1" / key) << "version: v1\n";
    fs::create_symlink(fs::path("..data") / key, dir / key);
  }
  fs::create_directory_symlink("..2026_11_29_10_00_00.1", dir / "..data");
  fs::create_directory(dir / "subdir");
  absl::StatusOr<std::vector<std::string>> names =
      ListNodeConfigs(dir.string());
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, ElementsAre("default", "ts"));
  absl::StatusOr<std::vector<std::string>> missing =
      ListNodeConfigs((dir / "nope").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("--config-dir"));
}

TEST(NodeConfigWatchTest, ReadsTheLabelAnEmptyValueIsNone) {
  const std::string label = kNodeConfigLabel;
  nlohmann::json node = {{"metadata", {{"labels", {{label, "mig"}}}}}};
  EXPECT_EQ(NodeConfigLabel(node, label), "mig");
  node["metadata"]["labels"][label] = "";
  EXPECT_EQ(NodeConfigLabel(node, label), std::nullopt);
  EXPECT_EQ(NodeConfigLabel(nlohmann::json::object(), label), std::nullopt);
  EXPECT_EQ(NodeConfigLabel({{"metadata", {{"labels", {{label, 3}}}}}}, label),
            std::nullopt);
}

TEST(NodeConfigWatchTest, TheReportSetsTheConfigurationAndClearsTheError) {
  nlohmann::json patch = NodeConfigReportPatch("ts", "");
  EXPECT_EQ(patch["metadata"]["annotations"][kNodeConfigAnnotation], "ts");
  EXPECT_TRUE(
      patch["metadata"]["annotations"][kNodeConfigErrorAnnotation].is_null());
  patch = NodeConfigReportPatch("ts", "mig was not applied");
  EXPECT_EQ(patch["metadata"]["annotations"][kNodeConfigErrorAnnotation],
            "mig was not applied");
}

}  // namespace
}  // namespace gpulet::daemon
