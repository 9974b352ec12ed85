// gpulet-runtime's command line without containers: bad input leaves
// config.json byte-identical and never starts the real runtime; good input
// reaches the real runtime (a recording script here) with argv unchanged.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"
#include "src/model/cdi/spec_codec.h"
#include "src/model/cdi/validate.h"
#include "test/integration/subprocess.h"

namespace gpulet::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class RuntimeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/grcXXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/driver");
    std::filesystem::create_directories(dir_ + "/cdi");
    std::filesystem::create_directories(dir_ + "/bundle");
    Write("fake-runc", "#!/bin/sh\necho \"$@\" > " + dir_ + "/ran\n");
    chmod((dir_ + "/fake-runc").c_str(), 0755);
    Write("cdi/nvidia.json", cdi::SpecToJson(Spec()));
    WriteRuntimeConfig("");
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  static cdi::Spec Spec() {
    cdi::Spec spec;
    spec.kind = "nvidia.com/gpu";
    for (int i = 0; i < 2; ++i) {
      cdi::Device device;
      device.name = std::to_string(i);
      cdi::DeviceNode node;
      node.path = absl::StrCat("/dev/nvidia", i);
      node.type = "c";
      node.major = 195;
      node.minor = i;
      node.file_mode = 0666;
      device.edits.device_nodes = {node};
      spec.devices.push_back(device);
    }
    spec.cdi_version = cdi::MinimumVersion(spec);
    return spec;
  }

  void Write(const std::string& rel, const std::string& text) {
    std::ofstream(dir_ + "/" + rel, std::ios::binary) << text;
  }
  void WriteRuntimeConfig(const std::string& extra) {
    Write("runtime.yaml",
          absl::StrCat("runtime: ", dir_, "/fake-runc\n", "driverRoot: ", dir_,
                       "/driver\n", "specDirs: [", dir_, "/cdi]\n", extra));
  }
  ProcessResult Runtime(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {GPULET_RUNTIME_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(
        argv, {{{"GPULET_RUNTIME_CONFIG", dir_ + "/runtime.yaml"}}, {}});
  }
  bool Ran() const { return access((dir_ + "/ran").c_str(), F_OK) == 0; }
  std::string RanArgs() const { return *common::ReadFile(dir_ + "/ran"); }
  std::string Bundle() const { return dir_ + "/bundle"; }
  std::string ConfigPath() const { return Bundle() + "/config.json"; }

  std::string dir_;
};

constexpr char kEnvOne[] =
    R"({"ociVersion":"1.0.2","root":{"path":"rootfs"},)"
    R"("process":{"env":["PATH=/bin","NVIDIA_VISIBLE_DEVICES=1"],)"
    R"("capabilities":{"bounding":["CAP_CHOWN"]}}})";

TEST_F(RuntimeCliTest, BadInputTable) {
  struct Case {
    std::string name;
    std::string config_json;
    std::string runtime_yaml;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"broken JSON", R"({"root": {"path": "rootfs"}, "process": )", "",
       "config.json: invalid JSON at byte"},
      {"missing root", R"({"process":{"env":["NVIDIA_VISIBLE_DEVICES=0"]}})",
       "", "config.json: root: missing"},
      {"unknown device",
       R"({"root":{"path":"r"},"process":{"env":["NVIDIA_VISIBLE_DEVICES=7"]}})",
       "", "unknown CDI device nvidia.com/gpu=7 (kind nvidia.com/gpu)\n"},
      {"bad CDI annotation",
       R"({"root":{"path":"r"},"process":{},"annotations":{"cdi.k8s.io/x":"gpu0"}})",
       "", "annotations[\"cdi.k8s.io/x\"]: CDI device \"gpu0\""},
      {"unprivileged env request", kEnvOne, "acceptEnvvarUnprivileged: false\n",
       "NVIDIA_VISIBLE_DEVICES=1: the container is unprivileged"},
      {"unreadable driver root", kEnvOne,
       "driverRoot: " + dir_ + "/no-driver\n",
       "driver root " + dir_ + "/no-driver"},
      {"unreadable spec dir", kEnvOne,
       "specDirs: [" + dir_ + "/runtime.yaml]\n",
       "CDI spec dir " + dir_ + "/runtime.yaml"},
      {"bad runtime config", kEnvOne, "specDir: [/x]\n",
       "specDir: unknown key"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Write("bundle/config.json", c.config_json);
    // A case's key replaces the default one (YAML forbids duplicate keys).
    if (absl::StartsWith(c.runtime_yaml, "driverRoot")) {
      Write("runtime.yaml",
            absl::StrCat("runtime: ", dir_, "/fake-runc\n", "specDirs: [", dir_,
                         "/cdi]\n", c.runtime_yaml));
    } else if (absl::StartsWith(c.runtime_yaml, "specDirs")) {
      Write("runtime.yaml",
            absl::StrCat("runtime: ", dir_, "/fake-runc\n",
                         "driverRoot: ", dir_, "/driver\n", c.runtime_yaml));
    } else {
      WriteRuntimeConfig(c.runtime_yaml);
    }
    ProcessResult r = Runtime(
        {"--root", dir_ + "/state", "create", "--bundle", Bundle(), "c1"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, StartsWith("gpulet-runtime: "));
    EXPECT_THAT(r.err, HasSubstr(c.error));
    EXPECT_EQ(*common::ReadFile(ConfigPath()), c.config_json);
    EXPECT_FALSE(Ran()) << "the real runtime ran with " << RanArgs();
  }
}

TEST_F(RuntimeCliTest, RequestIsInjectedThenRuntimeGetsSameArgs) {
  const std::string json_text =
      absl::StrReplaceAll(kEnvOne, {{"CAP_CHOWN", "CAP_SYS_ADMIN"}});
  Write("bundle/config.json", json_text);
  const std::vector<std::string> args = {
      "--root", "/r", "--log-format=json", "create", "--pid-file", "/p", "-b",
      Bundle(), "c1"};
  ProcessResult r = Runtime(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(RanArgs(), absl::StrJoin(args, " ") + "\n");
  json config = json::parse(*common::ReadFile(ConfigPath()));
  ASSERT_EQ(config["linux"]["devices"].size(), 1u);
  EXPECT_EQ(config["linux"]["devices"][0]["path"], "/dev/nvidia1");
  EXPECT_EQ(config["linux"]["resources"]["devices"][0],
            json::parse(R"({"allow":true,"type":"c","major":195,"minor":1,)"
                        R"("access":"rwm"})"));
  EXPECT_EQ(config["ociVersion"], "1.0.2");
}

TEST_F(RuntimeCliTest, BundleFromWorkingDirectory) {
  Write("bundle/config.json", kEnvOne);
  ProcessResult r =
      RunProcess({"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", Bundle(),
                  GPULET_RUNTIME_BINARY, "create", "c1"},
                 {{{"GPULET_RUNTIME_CONFIG", dir_ + "/runtime.yaml"}}, {}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      json::parse(*common::ReadFile(ConfigPath()))["linux"]["devices"].size(),
      1u);
}

TEST_F(RuntimeCliTest, NoRequestAndOtherSubcommandsAreUntouched) {
  const std::string text = R"({"root":{"path":"r"},  "process":{}})";
  Write("bundle/config.json", text);
  ProcessResult r = Runtime({"create", "--bundle", Bundle(), "c1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(*common::ReadFile(ConfigPath()), text);
  EXPECT_EQ(RanArgs(), "create --bundle " + Bundle() + " c1\n");
  // Broken config.json, but delete never reads it.
  Write("bundle/config.json", "{");
  r = Runtime({"delete", "--force", "-b", Bundle(), "c1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(RanArgs(), "delete --force -b " + Bundle() + " c1\n");
}

TEST_F(RuntimeCliTest, RuntimeNotFound) {
  Write("bundle/config.json", R"({"root":{"path":"r"},"process":{}})");
  Write("runtime.yaml", "runtime: no-such-runc-binary\n");
  ProcessResult r = Runtime({"start", "c1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("runtime \"no-such-runc-binary\" not found"));
}

TEST_F(RuntimeCliTest, LdcacheHookCommand) {
  std::filesystem::create_directories(Bundle() + "/rootfs/etc");
  Write("bundle/config.json", R"({"root":{"path":"rootfs"},"process":{}})");
  Write("fake-ldconfig",
        "#!/bin/sh\necho \"$@\" > " + dir_ + "/ldconfig-args\n");
  chmod((dir_ + "/fake-ldconfig").c_str(), 0755);
  const std::string state =
      R"({"ociVersion":"1.0.2","id":"c1","status":"creating","bundle":")" +
      Bundle() + R"("})";
  ProcessResult r = RunProcess(
      {"/bin/sh", "-c", "printf '%s' \"$0\" | exec \"$@\"", state,
       GPULET_RUNTIME_BINARY, "hook", "update-ldcache", "--folder", "/a",
       "--folder=/b", "--ldconfig-path", dir_ + "/fake-ldconfig"});
  // A script is no static ELF: it would need an interpreter, which inside
  // the container's root the image would choose. The hook leaves the cache
  // alone, says why, and does not fail the container.
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr(dir_ + "/fake-ldconfig: not an ELF file"));
  EXPECT_THAT(r.err, HasSubstr("a statically linked ldconfig is needed"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/ldconfig-args"));
  r = RunProcess({GPULET_RUNTIME_BINARY, "hook", "update-ldcache"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("container state on stdin"));
}

}  // namespace
}  // namespace gpulet::testing
