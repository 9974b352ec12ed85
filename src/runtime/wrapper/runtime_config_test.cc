#include "src/runtime/wrapper/runtime_config.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::config {
namespace {

using ::testing::HasSubstr;

TEST(RuntimeConfigTest, EmptyDocumentGivesDefaults) {
  absl::StatusOr<RuntimeConfig> config = ParseRuntimeConfig("", "rt.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(*config, RuntimeConfig{});
  EXPECT_EQ(config->runtime, "runc");
  EXPECT_EQ(config->driver_root, "/");
  EXPECT_EQ(config->spec_dirs,
            (std::vector<std::string>{"/etc/cdi", "/var/run/cdi"}));
  EXPECT_TRUE(config->accept_envvar_unprivileged);
  EXPECT_EQ(config->vendor, "nvidia.com");
  EXPECT_EQ(config->device_class, "gpu");
}

TEST(RuntimeConfigTest, EveryKey) {
  absl::StatusOr<RuntimeConfig> config = ParseRuntimeConfig(
      "runtime: /usr/local/sbin/runc\n"
      "driverRoot: /run/nvidia/driver\n"
      "specDirs: [/a, /b]\n"
      "acceptEnvvarUnprivileged: false\n"
      "vendor: example.com\n"
      "class: accel\n"
      "logFile: /var/log/gpulet-runtime.log\n",
      "rt.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->runtime, "/usr/local/sbin/runc");
  EXPECT_EQ(config->driver_root, "/run/nvidia/driver");
  EXPECT_EQ(config->spec_dirs, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_FALSE(config->accept_envvar_unprivileged);
  EXPECT_EQ(config->vendor, "example.com");
  EXPECT_EQ(config->device_class, "accel");
  EXPECT_EQ(config->log_file, "/var/log/gpulet-runtime.log");
}

struct BadCase {
  const char* yaml;
  const char* error;
};

TEST(RuntimeConfigTest, BadInputNamesTheKey) {
  const BadCase cases[] = {
      {"runtimes: runc\n", "rt.yaml:1:11: runtimes: unknown key"},
      {"runtime: \"\"\n", "runtime: must not be empty"},
      {"runtime: [a]\n", "runtime: must be a string"},
      {"specDirs: /etc/cdi\n", "specDirs: must be a list of paths"},
      {"specDirs: [/a, {x: 1}]\n", "specDirs[1]: must be a string"},
      {"acceptEnvvarUnprivileged: maybe\n",
       "acceptEnvvarUnprivileged: must be true or false"},
      {"- a\n", "the document must be a mapping"},
      {"runtime: [\n", "rt.yaml:2:1"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<RuntimeConfig> config =
        ParseRuntimeConfig(c.yaml, "rt.yaml");
    ASSERT_FALSE(config.ok()) << c.yaml;
    EXPECT_THAT(config.status().message(), HasSubstr(c.error)) << c.yaml;
  }
}

// Refused before yaml-cpp's recursive descent sees it.
TEST(RuntimeConfigTest, DeepNestingIsRefused) {
  absl::StatusOr<RuntimeConfig> config = ParseRuntimeConfig(
      "specDirs: " + std::string(100000, '[') + "\n", "rt.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "rt.yaml:1:1: nesting deeper than 16 levels");
  std::string compact = "specDirs:\n";
  for (int i = 0; i < 20; ++i) compact += "- ";
  config = ParseRuntimeConfig(compact + "x\n", "rt.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "rt.yaml:2:1: nesting deeper than 16 levels");
}

TEST(RuntimeConfigTest, LoadMissingFile) {
  EXPECT_TRUE(LoadRuntimeConfig("/nonexistent/rt.yaml", true).ok());
  absl::StatusOr<RuntimeConfig> named =
      LoadRuntimeConfig("/nonexistent/rt.yaml", false);
  ASSERT_FALSE(named.ok());
  EXPECT_THAT(named.status().message(), HasSubstr("/nonexistent/rt.yaml"));
}

TEST(RuntimeConfigTest, LoadFile) {
  char dir[] = "/tmp/rtcfgXXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/rt.yaml";
  std::ofstream(path) << "runtime: crun\n";
  absl::StatusOr<RuntimeConfig> config = LoadRuntimeConfig(path, false);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->runtime, "crun");
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace gpulet::config
