#include "src/runtime/wrapper/create.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"
#include "src/runtime/testing/test_dir.h"
#include "src/runtime/testing/test_specs.h"

namespace gpulet::runtime {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class PrepareBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("cdi/nvidia.json", "spec");
    options_.config.spec_dirs = {dir_.path() + "/cdi"};
    options_.config.driver_root = dir_.path();
    options_.parser = [](const std::string& text,
                         const std::string&) -> absl::StatusOr<cdi::Spec> {
      if (text == "spec") return testing::TwoGpuSpec();
      return absl::InvalidArgumentError("bad spec");
    };
    options_.lookup =
        [](const std::string& path) -> absl::StatusOr<HostDevice> {
      return absl::NotFoundError("no lookup expected for " + path);
    };
  }

  std::string WriteConfig(const std::string& text) {
    return dir_.Write("bundle/config.json", text);
  }
  std::string Bundle() const { return dir_.path() + "/bundle"; }

  testing::TempDir dir_;
  PrepareOptions options_;
};

constexpr char kWithEnv[] =
    R"({"ociVersion":"1.0.2","root":{"path":"rootfs"},)"
    R"("process":{"env":["NVIDIA_VISIBLE_DEVICES=1"]},"extra":[1]})";

TEST_F(PrepareBundleTest, NoRequestLeavesConfigUntouched) {
  const std::string text =
      R"({"root":{"path":"rootfs"},   "process":{"env":["A=1"]}})";
  const std::string path = WriteConfig(text);
  absl::StatusOr<PrepareResult> result = PrepareBundle(Bundle(), options_);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->modified);
  EXPECT_EQ(*common::ReadFile(path), text);
}

TEST_F(PrepareBundleTest, EnvRequestIsInjected) {
  const std::string path = WriteConfig(kWithEnv);
  absl::StatusOr<PrepareResult> result = PrepareBundle(Bundle(), options_);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->modified);
  EXPECT_THAT(result->injected, ElementsAre("nvidia.com/gpu=1"));
  json config = json::parse(*common::ReadFile(path));
  std::vector<std::string> paths;
  for (const json& d : config["linux"]["devices"]) paths.push_back(d["path"]);
  EXPECT_THAT(paths,
              ElementsAre("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia1"));
  EXPECT_EQ(config["extra"], json::parse("[1]"));
  EXPECT_EQ(config["hooks"]["createContainer"].size(), 1u);
}

// A node holding both the toolkit's nvidia.com/gpu spec and the device
// plugin's own k8s.device-plugin.nvidia.com/gpu spec (gpulet plugin with a
// CDI strategy, or NVIDIA's plugin): each name form injects its own spec's
// devices, and neither disturbs the other.
TEST_F(PrepareBundleTest, BothSpecKindsOnOneNode) {
  dir_.Write("cdi/k8s.device-plugin.nvidia.com-gpu.json", "plugin spec");
  options_.parser = [](const std::string& text,
                       const std::string&) -> absl::StatusOr<cdi::Spec> {
    cdi::Spec spec = testing::TwoGpuSpec();
    if (text == "spec") return spec;
    if (text != "plugin spec") return absl::InvalidArgumentError("bad spec");
    spec.kind = "k8s.device-plugin.nvidia.com/gpu";
    spec.devices[0].name = "GPU-a";
    spec.devices[1].name = "GPU-b";
    return spec;
  };
  struct Case {
    std::string config;
    std::vector<std::string> injected;
    std::vector<std::string> nodes;
  } cases[] = {
      {R"({"root":{"path":"r"},"process":{"env":[]},)"
       R"("annotations":{"cdi.k8s.io/nvidia-device-plugin_1":)"
       R"("k8s.device-plugin.nvidia.com/gpu=GPU-b"}})",
       {"k8s.device-plugin.nvidia.com/gpu=GPU-b"},
       {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia1"}},
      {R"({"root":{"path":"r"},"process":{"env":[]},)"
       R"("annotations":{"cdi.k8s.io/x":"nvidia.com/gpu=0"}})",
       {"nvidia.com/gpu=0"},
       {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0"}},
      {R"({"root":{"path":"r"},"process":{"env":["NVIDIA_VISIBLE_DEVICES=1"]}})",
       {"nvidia.com/gpu=1"},
       {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia1"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.config);
    const std::string path = WriteConfig(c.config);
    absl::StatusOr<PrepareResult> result = PrepareBundle(Bundle(), options_);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->injected, c.injected);
    json config = json::parse(*common::ReadFile(path));
    std::vector<std::string> paths;
    for (const json& d : config["linux"]["devices"]) paths.push_back(d["path"]);
    EXPECT_EQ(paths, c.nodes);
  }
}

TEST_F(PrepareBundleTest, NoneGivesTheDriverOnly) {
  const std::string path = WriteConfig(
      R"({"root":{"path":"r"},"process":{"env":["NVIDIA_VISIBLE_DEVICES=none"]}})");
  absl::StatusOr<PrepareResult> result = PrepareBundle(Bundle(), options_);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->injected, ElementsAre("nvidia.com/gpu driver"));
  json config = json::parse(*common::ReadFile(path));
  EXPECT_EQ(config["linux"]["devices"].size(), 2u);
  EXPECT_EQ(config["mounts"].size(), 1u);
}

TEST_F(PrepareBundleTest, ErrorsLeaveConfigByteIdentical) {
  struct Case {
    std::string config;
    std::function<void(PrepareOptions&)> tweak;
    std::string error;
  };
  const Case cases[] = {
      {"{\"root\":", nullptr, "invalid JSON"},
      {R"({"process":{"env":["NVIDIA_VISIBLE_DEVICES=0"]}})", nullptr,
       "root: missing"},
      {R"({"root":{"path":"r"},"process":{"env":["NVIDIA_VISIBLE_DEVICES=7"]}})",
       nullptr, "unknown CDI device nvidia.com/gpu=7"},
      {kWithEnv,
       [](PrepareOptions& o) { o.config.accept_envvar_unprivileged = false; },
       "the container is unprivileged"},
      {kWithEnv,
       [this](PrepareOptions& o) {
         o.config.driver_root = dir_.path() + "/cdi/nvidia.json";
       },
       "driver root " + dir_.path() + "/cdi/nvidia.json"},
      {kWithEnv,
       [this](PrepareOptions& o) {
         o.config.spec_dirs = {dir_.path() + "/cdi/nvidia.json"};
       },
       "CDI spec dir"},
  };
  for (const Case& c : cases) {
    const std::string path = WriteConfig(c.config);
    PrepareOptions options = options_;
    if (c.tweak) c.tweak(options);
    absl::StatusOr<PrepareResult> result = PrepareBundle(Bundle(), options);
    ASSERT_FALSE(result.ok()) << c.config;
    EXPECT_THAT(result.status().message(), HasSubstr(c.error)) << c.config;
    EXPECT_EQ(*common::ReadFile(path), c.config);
  }
}

TEST_F(PrepareBundleTest, MissingConfigNamesThePath) {
  absl::StatusOr<PrepareResult> result =
      PrepareBundle(dir_.path() + "/nobundle", options_);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(),
              HasSubstr(dir_.path() + "/nobundle/config.json"));
}

}  // namespace
}  // namespace gpulet::runtime
