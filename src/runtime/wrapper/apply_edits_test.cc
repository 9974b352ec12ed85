#include "src/runtime/wrapper/apply_edits.h"

#include <sys/stat.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/runtime/testing/test_specs.h"

namespace gpulet::runtime {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

absl::StatusOr<HostDevice> FakeLookup(const std::string& path) {
  if (path == "/host/dev/nvidia-uvm-tools") {
    return HostDevice{"c", 235, 1, 0666};
  }
  return absl::NotFoundError("stat " + path + ": No such file or directory");
}

json BaseConfig() {
  return json::parse(R"({
    "root": {"path": "rootfs"},
    "process": {"env": ["PATH=/bin", "NVIDIA_DRIVER_ROOT=/old"]},
    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
    "linux": {"resources": {"devices": [{"allow": false, "access": "rwm"}]},
              "namespaces": [{"type": "mount"}]},
    "hooks": {"createContainer": [{"path": "/existing"}]}
  })");
}

TEST(ApplyEditsTest, SpecEditsLandInEveryField) {
  json config = BaseConfig();
  cdi::Spec spec = testing::TwoGpuSpec();
  ASSERT_TRUE(ApplyEdits(spec.edits, FakeLookup, config).ok());
  ASSERT_TRUE(ApplyEdits(spec.devices[1].edits, FakeLookup, config).ok());

  EXPECT_EQ(config["process"]["env"],
            json::parse(R"(["PATH=/bin","NVIDIA_DRIVER_ROOT=/drv"])"));
  EXPECT_EQ(config["linux"]["devices"], json::parse(R"([
    {"path":"/dev/nvidiactl","type":"c","major":195,"minor":255,"fileMode":438},
    {"path":"/dev/nvidia-uvm","type":"c","major":235,"minor":0,"fileMode":438},
    {"path":"/dev/nvidia1","type":"c","major":195,"minor":1,"fileMode":438}])"));
  EXPECT_EQ(config["linux"]["resources"]["devices"], json::parse(R"([
    {"allow":false,"access":"rwm"},
    {"allow":true,"type":"c","major":195,"minor":255,"access":"rwm"},
    {"allow":true,"type":"c","major":235,"minor":0,"access":"rwm"},
    {"allow":true,"type":"c","major":195,"minor":1,"access":"rwm"}])"));
  EXPECT_EQ(config["mounts"][1], json::parse(R"(
    {"destination":"/usr/lib/libcuda.so.550.54.15","type":"bind",
     "source":"/drv/usr/lib/libcuda.so.550.54.15",
     "options":["ro","nosuid","nodev","bind"]})"));
  EXPECT_EQ(config["hooks"]["createContainer"].size(), 2u);
  EXPECT_EQ(config["hooks"]["createContainer"][1]["args"][2], "update-ldcache");
  EXPECT_EQ(config["linux"]["namespaces"], BaseConfig()["linux"]["namespaces"]);
}

// A hook without env would run with the container's environment (runc
// passes `runc init`'s, which holds process.env): any spec's hook gets an
// explicit clean one; an env the spec sets is kept as it is.
TEST(ApplyEditsTest, HooksWithoutEnvGetACleanOne) {
  json config = BaseConfig();
  config["process"]["env"].push_back("LD_PRELOAD=/proc/self/cwd/x.so");
  cdi::ContainerEdits edits;
  edits.hooks = {
      cdi::Hook{"createContainer", "/third/party", {"x"}, {}, std::nullopt},
      cdi::Hook{"startContainer", "/own/env", {}, {"A=1"}, 7}};
  ASSERT_TRUE(ApplyEdits(edits, FakeLookup, config).ok());
  EXPECT_EQ(config["hooks"]["createContainer"][1], json::parse(R"(
    {"path":"/third/party","args":["x"],
     "env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]})"));
  EXPECT_EQ(config["hooks"]["startContainer"][0], json::parse(R"(
    {"path":"/own/env","env":["A=1"],"timeout":7})"));
  // The hook the engine put there itself is not the runtime's to change.
  EXPECT_EQ(config["hooks"]["createContainer"][0],
            json::parse(R"({"path":"/existing"})"));
}

TEST(ApplyEditsTest, ReapplyingDoesNotDuplicate) {
  json config = BaseConfig();
  cdi::Spec spec = testing::TwoGpuSpec();
  ASSERT_TRUE(ApplyEdits(spec.devices[0].edits, FakeLookup, config).ok());
  ASSERT_TRUE(ApplyEdits(spec.devices[2].edits, FakeLookup, config).ok());
  EXPECT_EQ(config["linux"]["devices"].size(), 2u);
  EXPECT_EQ(config["linux"]["resources"]["devices"].size(), 3u);
}

TEST(ApplyEditsTest, MissingFieldsComeFromTheHost) {
  json config = json::parse(R"({"root":{"path":"r"},"process":{}})");
  cdi::ContainerEdits edits;
  cdi::DeviceNode node;
  node.path = "/dev/nvidia-uvm-tools";
  node.host_path = "/host/dev/nvidia-uvm-tools";
  node.permissions = "rw";
  node.gid = 44;
  edits.device_nodes = {node};
  cdi::Mount mount;
  mount.host_path = "/h";
  mount.container_path = "/c";
  edits.mounts = {mount};
  ASSERT_TRUE(ApplyEdits(edits, FakeLookup, config).ok());
  EXPECT_EQ(config["linux"]["devices"][0], json::parse(R"(
    {"path":"/dev/nvidia-uvm-tools","type":"c","major":235,"minor":1,
     "fileMode":438,"gid":44})"));
  EXPECT_EQ(config["linux"]["resources"]["devices"][0]["access"], "rw");
  EXPECT_EQ(config["mounts"][0]["options"], json::parse(R"(["bind"])"));
}

// As the CDI reference library: a node whose spec gives type and major is
// not looked up on the host (it may not exist there, e.g. a MIG caps node
// before the instance is created), and gets no fileMode.
TEST(ApplyEditsTest, TypeAndMajorInTheSpecNeedNoHostNode) {
  json config = json::parse(R"({"root":{"path":"r"},"process":{}})");
  cdi::ContainerEdits edits;
  cdi::DeviceNode node;
  node.path = "/dev/nvidia-caps/nvidia-cap12";
  node.type = "c";
  node.major = 235;
  node.minor = 12;
  edits.device_nodes = {node};
  ASSERT_TRUE(ApplyEdits(edits, FakeLookup, config).ok());
  EXPECT_EQ(config["linux"]["devices"][0], json::parse(R"(
    {"path":"/dev/nvidia-caps/nvidia-cap12","type":"c","major":235,
     "minor":12})"));
}

TEST(ApplyEditsTest, AdditionalGids) {
  json config = json::parse(
      R"({"root":{"path":"r"},"process":{"user":{"uid":0,"additionalGids":[5]}}})");
  cdi::ContainerEdits edits;
  edits.additional_gids = {0, 5, 44};
  ASSERT_TRUE(ApplyEdits(edits, FakeLookup, config).ok());
  EXPECT_EQ(config["process"]["user"],
            json::parse(R"({"uid":0,"additionalGids":[5,44]})"));
}

TEST(ApplyEditsTest, RealStat) {
  absl::StatusOr<HostDevice> null = StatHostDevice("/dev/null");
  ASSERT_TRUE(null.ok()) << null.status();
  EXPECT_EQ(null->type, "c");
  EXPECT_EQ(null->major, 1);
  EXPECT_EQ(null->minor, 3);
  EXPECT_FALSE(StatHostDevice("/etc/hostname").ok());
}

TEST(ApplyEditsTest, Errors) {
  json config = BaseConfig();
  cdi::ContainerEdits missing;
  missing.device_nodes.resize(1);
  missing.device_nodes[0].path = "/dev/nvidia9";
  absl::Status s = ApplyEdits(missing, FakeLookup, config);
  EXPECT_THAT(s.message(), HasSubstr("device node /dev/nvidia9"));
  EXPECT_THAT(s.message(), HasSubstr("stat /dev/nvidia9"));

  cdi::ContainerEdits bad_perm;
  bad_perm.device_nodes = {testing::Node("/dev/nvidia0", 0)};
  bad_perm.device_nodes[0].permissions = "rwx";
  EXPECT_THAT(ApplyEdits(bad_perm, FakeLookup, config).message(),
              HasSubstr("permissions \"rwx\""));

  cdi::ContainerEdits bad_hook;
  bad_hook.hooks.resize(1);
  bad_hook.hooks[0].hook_name = "preStart";
  bad_hook.hooks[0].path = "/x";
  EXPECT_THAT(ApplyEdits(bad_hook, FakeLookup, config).message(),
              HasSubstr("unknown hookName \"preStart\""));

  cdi::ContainerEdits bad_env;
  bad_env.env = {"NOEQUALS"};
  EXPECT_THAT(ApplyEdits(bad_env, FakeLookup, config).message(),
              HasSubstr("CDI env \"NOEQUALS\""));
}

}  // namespace
}  // namespace gpulet::runtime
