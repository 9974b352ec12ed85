#include "src/cli/runtime_configure_command.h"

#include <stdio.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/cli/app.h"

namespace gpulet::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kConfig[] =
    "version = 2\n"
    "# the node's own settings\n"
    "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
    "  runtime_type = \"io.containerd.runc.v2\"\n";

class RuntimeConfigureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rcXXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string Write(const std::string& rel, const std::string& text) {
    std::string path = dir_ + "/" + rel;
    std::filesystem::create_directories(
        std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  struct Result {
    int code;
    std::string out;
    std::string err;
  };
  static Result Gpulet(std::vector<const char*> args) {
    args.insert(args.begin(), {"gpulet", "runtime", "configure"});
    std::ostringstream out;
    std::ostringstream err;
    int code = cli::Run(static_cast<int>(args.size()), args.data(), out, err);
    return {code, out.str(), err.str()};
  }

  std::string dir_;
};

TEST_F(RuntimeConfigureTest, WritesTheFileAndKeepsThePreviousOne) {
  std::string config = Write("config.toml", kConfig);
  Result r = Gpulet({"--runtime", "containerd", "--config", config.c_str(),
                     "--set-as-default"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("added runtime gpulet"));
  EXPECT_THAT(r.out, HasSubstr(config + ".bak"));
  EXPECT_EQ(Read(config + ".bak"), kConfig);
  std::string written = Read(config);
  EXPECT_THAT(written, StartsWith(std::string(kConfig)));
  EXPECT_THAT(written, HasSubstr("BinaryName = \"/usr/bin/gpulet-runtime\""));
  EXPECT_THAT(written, HasSubstr("default_runtime_name = \"gpulet\""));

  // Again: nothing to do, and the saved original stays.
  r = Gpulet({"--runtime", "containerd", "--config", config.c_str(),
              "--set-as-default"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("already configured"));
  EXPECT_EQ(Read(config), written);
  EXPECT_EQ(Read(config + ".bak"), kConfig);
}

TEST_F(RuntimeConfigureTest, DryRunPrintsTheDiffAndWritesNothing) {
  std::string config = Write("config.toml", kConfig);
  Result r = Gpulet(
      {"--runtime", "containerd", "--config", config.c_str(), "--dry-run"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("--- " + config + "\n+++ " + config + "\n@@ "));
  EXPECT_THAT(r.out, HasSubstr("\n+[plugins.\"io.containerd.grpc.v1.cri\"."
                               "containerd.runtimes.gpulet]\n"));
  EXPECT_EQ(Read(config), kConfig);
  EXPECT_FALSE(std::filesystem::exists(config + ".bak"));
}

TEST_F(RuntimeConfigureTest, UnparsableFileIsAnErrorAndStaysAsItWas) {
  const std::string bad = "version = 2\n[plugins\n";
  std::string config = Write("config.toml", bad);
  Result r = Gpulet({"--runtime", "containerd", "--config", config.c_str()});
  EXPECT_EQ(r.code, kExitRuntimeError);
  EXPECT_THAT(r.err, StartsWith("gpulet: " + config + ":2: invalid TOML"));
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_EQ(Read(config), bad);
  EXPECT_FALSE(std::filesystem::exists(config + ".bak"));
}

TEST_F(RuntimeConfigureTest,
       MissingDropInIsCreatedAndBackupsStayOutOfDropInDirs) {
  std::string dropin = dir_ + "/crio.conf.d/99-gpulet.conf";
  Result r = Gpulet({"--runtime", "crio", "--config", dropin.c_str()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(Read(dropin), HasSubstr("[crio.runtime.runtimes.gpulet]\n"));

  r = Gpulet(
      {"--runtime", "crio", "--config", dropin.c_str(), "--set-as-default"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/99-gpulet.conf.bak"));
  EXPECT_EQ(
      std::distance(std::filesystem::directory_iterator(dir_ + "/crio.conf.d"),
                    std::filesystem::directory_iterator()),
      1);
}

TEST_F(RuntimeConfigureTest, UnknownEngineIsAUsageError) {
  Result r = Gpulet({"--runtime", "podman"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, StartsWith("gpulet: "));
  r = Gpulet({});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--runtime"));
}

// Output of a shell command (stdout and stderr).
std::string Shell(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  ::pclose(pipe);
  return out;
}

// The installed containerd's own default config, configured, is one
// containerd reads with the runtime in it. (test/cluster runs pods on it.)
TEST_F(RuntimeConfigureTest, ContainerdReadsWhatItWrites) {
  std::string config = dir_ + "/config.toml";
  Shell("containerd config default > " + config);
  ASSERT_THAT(Read(config), HasSubstr("version = 2")) << Read(config);
  Result r = Gpulet({"--runtime", "containerd", "--config", config.c_str(),
                     "--set-as-default"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  std::string dump = Shell("containerd --config " + config + " config dump");
  EXPECT_THAT(dump, HasSubstr("default_runtime_name = \"gpulet\""));
  EXPECT_THAT(dump, HasSubstr("[plugins.\"io.containerd.grpc.v1.cri\"."
                              "containerd.runtimes.gpulet.options]"));
  EXPECT_THAT(dump, HasSubstr("BinaryName = \"/usr/bin/gpulet-runtime\""));
  EXPECT_THAT(dump, HasSubstr("container_annotations = [\"cdi.k8s.io/*\"]"));
}

TEST(BackupPathTest, BesideTheFileUnlessInADropInDir) {
  EXPECT_EQ(BackupPath("/etc/containerd/config.toml"),
            "/etc/containerd/config.toml.bak");
  EXPECT_EQ(BackupPath("/etc/crio/crio.conf.d/99-gpulet.conf"),
            "/etc/crio/99-gpulet.conf.bak");
}

}  // namespace
}  // namespace gpulet::cli
