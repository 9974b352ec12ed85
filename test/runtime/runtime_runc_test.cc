// gpulet-runtime under real runc: containers on a fake driver root see
// exactly the device nodes, cgroup rules and libraries their request asks
// for. Skipped unless root with runc and busybox-static installed.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"
#include "src/model/cdi/spec_file.h"
#include "test/integration/subprocess.h"
#include "test/runtime/runc_fixture.h"
#include "test/runtime/runc_test.h"

namespace gpulet::testing {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;
using ::testing::Not;
using ::testing::UnorderedElementsAreArray;

const std::vector<std::string> kControlNodes = {
    "nvidiactl", "nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools"};
const std::string kCudaLib = absl::StrCat("libcuda.so.", kFakeDriverVersion);
const std::string kNvmlLib =
    absl::StrCat("libnvidia-ml.so.", kFakeDriverVersion);
const std::vector<std::string> kControlRules = {
    "c 195:255 rwm", "c 195:254 rwm", "c 235:0 rwm", "c 235:1 rwm"};

class RuntimeRuncTest : public RuncTest<> {
 protected:
  void SetUp() override {
    RuncTest<>::SetUp();
    if (SetUpStopped()) return;
    id_ = fixture_->dir().substr(5);  // unique: the temp dir's name
  }

  ProcessResult Runtime(std::vector<std::string> args) {
    args.insert(args.begin(),
                {GPULET_RUNTIME_BINARY, "--root", fixture_->state_root()});
    return RunProcess(
        args, {{{"GPULET_RUNTIME_CONFIG", fixture_->runtime_config()}}, {}});
  }

  // `gpulet-runtime run` of a container printing its view. `edit` changes
  // config.json first; `after` receives config.json as runc saw it.
  ContainerView RunView(const std::vector<std::string>& env,
                        const std::function<void(json&)>& edit = nullptr,
                        json* after = nullptr) {
    absl::StatusOr<std::string> bundle =
        fixture_->MakeBundle("b-" + id_, ViewCommand(), env);
    EXPECT_TRUE(bundle.ok()) << bundle.status();
    if (!bundle.ok()) return {};
    if (edit) {
      json config = *fixture_->ReadConfig(*bundle);
      edit(config);
      EXPECT_TRUE(fixture_->WriteConfig(*bundle, config).ok());
    }
    fixture_->Track(id_);
    ProcessResult r = Runtime({"run", "--bundle", *bundle, id_});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (after != nullptr) *after = *fixture_->ReadConfig(*bundle);
    return ParseView(r.out);
  }

  static std::vector<std::string> NvidiaNodes(const ContainerView& view) {
    std::vector<std::string> nodes;
    for (const std::string& d : view.dev) {
      if (absl::StartsWith(d, "nvidia")) nodes.push_back(d);
    }
    return nodes;
  }
  // The rules for NVIDIA's majors; runc's defaults are left out.
  static std::vector<std::string> NvidiaRules(const ContainerView& view) {
    std::vector<std::string> rules;
    for (const std::string& r : view.cgroup_rules) {
      if (absl::StartsWith(r, "c 195:") || absl::StartsWith(r, "c 235:")) {
        rules.push_back(r);
      }
    }
    return rules;
  }
  static std::vector<std::string> Plus(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  std::string id_;
};

TEST_F(RuntimeRuncTest, OneGpuByEnvThroughCreateStartExecDelete) {
  absl::StatusOr<std::string> bundle = fixture_->MakeBundle(
      "b1", {"sleep", "1000"}, {"NVIDIA_VISIBLE_DEVICES=1"});
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  fixture_->Track(id_);
  // create's stdio stays with the container, so it gets none of ours.
  ProcessResult created = RunProcess(
      {"/bin/sh", "-c", "exec \"$@\" </dev/null >/dev/null 2>\"$ERR\"", "sh",
       GPULET_RUNTIME_BINARY, "--root", fixture_->state_root(), "create",
       "--bundle", *bundle, id_},
      {{{"GPULET_RUNTIME_CONFIG", fixture_->runtime_config()},
        {"ERR", fixture_->dir() + "/create.err"}},
       {}});
  ASSERT_EQ(created.exit_code, 0)
      << *common::ReadFile(fixture_->dir() + "/create.err");

  // config.json as runc read it.
  json config = *fixture_->ReadConfig(*bundle);
  std::vector<std::string> paths;
  for (const json& d : config["linux"]["devices"]) paths.push_back(d["path"]);
  EXPECT_THAT(paths,
              UnorderedElementsAreArray(
                  {"/dev/nvidiactl", "/dev/nvidia-modeset", "/dev/nvidia-uvm",
                   "/dev/nvidia-uvm-tools", "/dev/nvidia1"}));
  std::vector<std::string> allowed;
  for (const json& r : config["linux"]["resources"]["devices"]) {
    if (r["allow"] == true && r.contains("major")) {
      allowed.push_back(absl::StrCat(
          r["type"].get<std::string>(), " ", r["major"].get<int>(), ":",
          r["minor"].get<int>(), " ", r["access"].get<std::string>()));
    }
  }
  EXPECT_THAT(allowed,
              UnorderedElementsAreArray(Plus(kControlRules, {"c 195:1 rwm"})));
  EXPECT_EQ(config["hooks"]["createContainer"][0]["path"],
            GPULET_RUNTIME_BINARY);

  ProcessResult started = Runtime({"start", id_});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  std::vector<std::string> exec_args = {"exec", id_};
  for (const std::string& a : ViewCommand()) exec_args.push_back(a);
  ProcessResult exec = Runtime(exec_args);
  ASSERT_EQ(exec.exit_code, 0) << exec.err;
  ContainerView view = ParseView(exec.out);
  EXPECT_THAT(NvidiaNodes(view),
              UnorderedElementsAreArray(Plus(kControlNodes, {"nvidia1"})));
  // Inside the container, from the device cgroup itself.
  EXPECT_THAT(NvidiaRules(view),
              UnorderedElementsAreArray(Plus(kControlRules, {"c 195:1 rwm"})));
  // The libraries, and the soname links the ld-cache hook's ldconfig made.
  EXPECT_THAT(view.libs,
              IsSupersetOf(std::vector<std::string>{
                  kCudaLib, "libcuda.so.1", kNvmlLib, "libnvidia-ml.so.1"}));
  struct stat st;
  EXPECT_EQ(stat((*bundle + "/rootfs/etc/ld.so.cache").c_str(), &st), 0);

  ProcessResult deleted = Runtime({"delete", "--force", id_});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.err;
}

TEST_F(RuntimeRuncTest, NoRequestLeavesConfigAlone) {
  absl::StatusOr<std::string> bundle =
      fixture_->MakeBundle("b-" + id_, ViewCommand(), {});
  ASSERT_TRUE(bundle.ok());
  const std::string before = *common::ReadFile(*bundle + "/config.json");
  fixture_->Track(id_);
  ProcessResult r = Runtime({"run", "--bundle", *bundle, id_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(*common::ReadFile(*bundle + "/config.json"), before);
  ContainerView view = ParseView(r.out);
  EXPECT_THAT(NvidiaNodes(view), ::testing::IsEmpty());
  EXPECT_THAT(NvidiaRules(view), ::testing::IsEmpty());
  EXPECT_THAT(view.dev, Contains("null"));
}

TEST_F(RuntimeRuncTest, VoidIsNoRequest) {
  json after;
  ContainerView view =
      RunView({"NVIDIA_VISIBLE_DEVICES=void"}, nullptr, &after);
  EXPECT_THAT(NvidiaNodes(view), ::testing::IsEmpty());
  EXPECT_FALSE(after.contains("hooks"));
}

TEST_F(RuntimeRuncTest, AllGpus) {
  ContainerView view = RunView({"NVIDIA_VISIBLE_DEVICES=all"});
  EXPECT_THAT(
      NvidiaNodes(view),
      UnorderedElementsAreArray(
          Plus(kControlNodes, {"nvidia0", "nvidia1", "nvidia2", "nvidia3"})));
  EXPECT_THAT(NvidiaRules(view),
              UnorderedElementsAreArray(
                  Plus(kControlRules, {"c 195:0 rwm", "c 195:1 rwm",
                                       "c 195:2 rwm", "c 195:3 rwm"})));
}

TEST_F(RuntimeRuncTest, NoneGivesDriverWithoutGpus) {
  ContainerView view = RunView({"NVIDIA_VISIBLE_DEVICES=none"});
  EXPECT_THAT(NvidiaNodes(view), UnorderedElementsAreArray(kControlNodes));
  EXPECT_THAT(NvidiaRules(view), UnorderedElementsAreArray(kControlRules));
  EXPECT_THAT(view.libs, Contains("libcuda.so.1"));
}

TEST_F(RuntimeRuncTest, ListOfIndexAndUuid) {
  ContainerView view = RunView({"NVIDIA_VISIBLE_DEVICES=0,GPU-fake-3"});
  EXPECT_THAT(NvidiaNodes(view), UnorderedElementsAreArray(Plus(
                                     kControlNodes, {"nvidia0", "nvidia3"})));
}

TEST_F(RuntimeRuncTest, CdiAnnotation) {
  json after;
  ContainerView view = RunView(
      {},
      [](json& config) {
        config["annotations"]["cdi.k8s.io/gpulet_abc"] =
            "nvidia.com/gpu=2,nvidia.com/gpu=GPU-fake-3";
      },
      &after);
  EXPECT_THAT(NvidiaNodes(view), UnorderedElementsAreArray(Plus(
                                     kControlNodes, {"nvidia2", "nvidia3"})));
  EXPECT_THAT(NvidiaRules(view),
              UnorderedElementsAreArray(
                  Plus(kControlRules, {"c 195:2 rwm", "c 195:3 rwm"})));
  EXPECT_THAT(after["process"]["env"], Contains("NVIDIA_VISIBLE_DEVICES=void"));
}

TEST_F(RuntimeRuncTest, VolumeMounts) {
  ContainerView view =
      RunView({"NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices"},
              [](json& config) {
                for (const char* id : {"GPU-fake-0", "2"}) {
                  config["mounts"].push_back(
                      {{"destination",
                        absl::StrCat("/var/run/nvidia-container-devices/", id)},
                       {"source", "/dev/null"},
                       {"type", "bind"},
                       {"options", {"bind", "ro"}}});
                }
              });
  EXPECT_THAT(NvidiaNodes(view), UnorderedElementsAreArray(Plus(
                                     kControlNodes, {"nvidia0", "nvidia2"})));
}

// The spec `gpulet cdi generate` writes for the simulator's pcie-t4 node
// over this fake driver root, instead of the fixture's own: what the cdi
// layer generates is what the runtime injects.
TEST_F(RuntimeRuncTest, SpecFromGpuletCdiGenerate) {
  const std::string spec_path = fixture_->spec_dir() + "/nvidia.com-gpu.json";
  ProcessResult gen = RunProcess(
      {GPULET_BINARY, "--nvml-lib", GPULET_SIM_LIB_DIR "/libnvidia-ml.so.1",
       "--driver-root", fixture_->driver_root(), "cdi", "generate", "--format",
       "json", "--hook-path", GPULET_RUNTIME_BINARY, "--output", spec_path},
      {{{"GPULET_SIM_MACHINE", "pcie-t4"}}, {}});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  absl::StatusOr<cdi::Spec> spec = cdi::ReadSpecFile(spec_path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  // GPU 1 by index and GPU 2 by UUID: the UUID is the device whose node is
  // the same as "2"'s.
  std::string node1, node2, uuid2;
  for (const cdi::Device& d : spec->devices) {
    if (d.name == "1") node1 = d.edits.device_nodes.at(0).path;
    if (d.name == "2") node2 = d.edits.device_nodes.at(0).path;
  }
  for (const cdi::Device& d : spec->devices) {
    if (absl::StartsWith(d.name, "GPU-") &&
        d.edits.device_nodes.at(0).path == node2) {
      uuid2 = d.name;
    }
  }
  ASSERT_FALSE(node1.empty() || uuid2.empty());
  ContainerView view = RunView({"NVIDIA_VISIBLE_DEVICES=1," + uuid2});
  std::vector<std::string> expected = kControlNodes;
  expected.push_back(node1.substr(5));
  expected.push_back(node2.substr(5));
  EXPECT_THAT(NvidiaNodes(view), UnorderedElementsAreArray(expected));
  EXPECT_THAT(view.libs, IsSupersetOf(std::vector<std::string>{
                             kCudaLib, "libcuda.so.1", "libnvidia-ml.so.1"}));
}

TEST_F(RuntimeRuncTest, OtherSubcommandsPassThrough) {
  ProcessResult version = Runtime({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_THAT(version.out, HasSubstr("runc version"));
  ProcessResult state = Runtime({"state", "no-such-container"});
  EXPECT_NE(state.exit_code, 0);
  EXPECT_THAT(state.err, HasSubstr("container does not exist"));
  EXPECT_THAT(state.err, Not(HasSubstr("gpulet-runtime")));
}

}  // namespace
}  // namespace gpulet::testing
