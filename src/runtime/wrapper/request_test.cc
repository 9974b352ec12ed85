#include "src/runtime/wrapper/request.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::runtime {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json Config(const std::vector<std::string>& env) {
  json config = {{"root", {{"path", "rootfs"}}}, {"process", {{"env", env}}}};
  return config;
}

std::vector<std::string> Names(const json& config,
                               const RequestOptions& options = {}) {
  absl::StatusOr<GpuRequest> request = DetectRequest(config, options);
  EXPECT_TRUE(request.ok()) << request.status();
  return request.ok() ? request->cdi_names : std::vector<std::string>{};
}

TEST(RequestTest, EnvForms) {
  EXPECT_THAT(Names(Config({})), ElementsAre());
  EXPECT_THAT(Names(Config({"NVIDIA_VISIBLE_DEVICES="})), ElementsAre());
  EXPECT_THAT(Names(Config({"NVIDIA_VISIBLE_DEVICES=void"})), ElementsAre());
  EXPECT_THAT(Names(Config({"NVIDIA_VISIBLE_DEVICES=1"})),
              ElementsAre("nvidia.com/gpu=1"));
  EXPECT_THAT(Names(Config({"NVIDIA_VISIBLE_DEVICES=all"})),
              ElementsAre("nvidia.com/gpu=all"));
  EXPECT_THAT(
      Names(Config({"NVIDIA_VISIBLE_DEVICES=0,0:1,GPU-a1b2,MIG-c3d4,0"})),
      ElementsAre("nvidia.com/gpu=0", "nvidia.com/gpu=0:1",
                  "nvidia.com/gpu=GPU-a1b2", "nvidia.com/gpu=MIG-c3d4"));
  EXPECT_THAT(Names(Config({"NVIDIA_VISIBLE_DEVICES=nvidia.com/gpu=1,2"})),
              ElementsAre("nvidia.com/gpu=1", "nvidia.com/gpu=2"));
  EXPECT_THAT(
      Names(Config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_VISIBLE_DEVICES=2"})),
      ElementsAre("nvidia.com/gpu=2"));
  RequestOptions other;
  other.vendor = "example.com";
  other.device_class = "accel";
  EXPECT_THAT(Names(Config({"NVIDIA_VISIBLE_DEVICES=3"}), other),
              ElementsAre("example.com/accel=3"));
}

TEST(RequestTest, NoneMeansDriverOnly) {
  absl::StatusOr<GpuRequest> request =
      DetectRequest(Config({"NVIDIA_VISIBLE_DEVICES=none"}), {});
  ASSERT_TRUE(request.ok());
  EXPECT_TRUE(request->driver_only);
  EXPECT_TRUE(request->cdi_names.empty());
  EXPECT_FALSE(request->empty());
}

TEST(RequestTest, AnnotationsAndMounts) {
  json config =
      Config({"NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices"});
  config["annotations"] = {
      {"cdi.k8s.io/gpulet_abc", "nvidia.com/gpu=0, nvidia.com/gpu=1"},
      {"io.kubernetes.cri.sandbox-id", "x"}};
  // containerd's shape, CRI-O's, and bind given by options only.
  config["mounts"] =
      json::array({{{"destination", "/var/run/nvidia-container-devices/GPU-x"},
                    {"source", "/dev/null"},
                    {"type", "bind"},
                    {"options", {"rbind", "rprivate", "ro"}}},
                   {{"destination", "/var/run/nvidia-container-devices/1"},
                    {"source", "/dev/null"},
                    {"type", "bind"}},
                   {{"destination", "/var/run/nvidia-container-devices/0"},
                    {"source", "/dev/null"},
                    {"options", {"ro", "bind"}}},
                   {{"destination", "/proc"}, {"source", "proc"}}});
  EXPECT_THAT(Names(config), ElementsAre("nvidia.com/gpu=0", "nvidia.com/gpu=1",
                                         "nvidia.com/gpu=GPU-x"));
  // The env var pointing at the mount dir without mounts asks for nothing.
  EXPECT_THAT(
      Names(
          Config({"NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices"})),
      ElementsAre());
}

TEST(RequestTest, UnprivilegedEnvRequest) {
  RequestOptions strict;
  strict.accept_envvar_unprivileged = false;
  absl::StatusOr<GpuRequest> refused =
      DetectRequest(Config({"NVIDIA_VISIBLE_DEVICES=0"}), strict);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsPermissionDenied(refused.status()));
  EXPECT_THAT(
      refused.status().message(),
      HasSubstr("NVIDIA_VISIBLE_DEVICES=0: the container is unprivileged"));
  json privileged = Config({"NVIDIA_VISIBLE_DEVICES=0"});
  privileged["process"]["capabilities"]["bounding"] = {"CAP_SYS_ADMIN"};
  EXPECT_THAT(Names(privileged, strict), ElementsAre("nvidia.com/gpu=0"));
  // void asks for nothing, and mounts come from the kubelet.
  EXPECT_TRUE(
      DetectRequest(Config({"NVIDIA_VISIBLE_DEVICES=void"}), strict).ok());
  json mounted = Config({});
  mounted["mounts"] =
      json::array({{{"destination", "/var/run/nvidia-container-devices/0"},
                    {"source", "/dev/null"},
                    {"type", "bind"}}});
  EXPECT_THAT(Names(mounted, strict), ElementsAre("nvidia.com/gpu=0"));
}

// Only the kubelet's mounts count: a pod spec can put an emptyDir, a
// configMap or a tmpfs at the same destination.
TEST(RequestTest, MountsOfOtherSourcesAskForNothing) {
  const std::string dest = "/var/run/nvidia-container-devices/all";
  const std::vector<json> mounts = {
      {{"destination", dest},
       {"source", "/var/lib/kubelet/pods/p/volumes/kubernetes.io~empty-dir/x"},
       {"type", "bind"},
       {"options", {"rbind", "rprivate", "rw"}}},
      {{"destination", dest}, {"source", "tmpfs"}, {"type", "tmpfs"}},
      {{"destination", dest}, {"source", "/dev/null"}, {"type", "tmpfs"}},
      {{"destination", dest}, {"source", "/dev/null"}},
      {{"destination", dest}, {"source", "/dev//null"}, {"type", "bind"}},
      {{"destination", dest}, {"type", "bind"}},
  };
  RequestOptions strict;
  strict.accept_envvar_unprivileged = false;
  for (const json& mount : mounts) {
    json config =
        Config({"NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices"});
    config["mounts"] = json::array({mount});
    absl::StatusOr<GpuRequest> request = DetectRequest(config, strict);
    ASSERT_TRUE(request.ok()) << mount << ": " << request.status();
    EXPECT_TRUE(request->empty()) << mount;
  }
  // With the mount ignored, an env request is judged as one.
  json config = Config({"NVIDIA_VISIBLE_DEVICES=all"});
  config["mounts"] = json::array({mounts[0]});
  EXPECT_TRUE(absl::IsPermissionDenied(DetectRequest(config, strict).status()));
}

TEST(RequestTest, EnvNamesOnlyTheDefaultKind) {
  for (const std::string& name :
       {std::string("k8s.gpu.nvidia.com/claim=0f3c-gpu-0"),
        std::string("example.com/accel=0"),
        std::string("k8s.device-plugin.nvidia.com/gpu=GPU-x")}) {
    absl::StatusOr<GpuRequest> request =
        DetectRequest(Config({"NVIDIA_VISIBLE_DEVICES=0," + name}), {});
    ASSERT_FALSE(request.ok()) << name;
    EXPECT_TRUE(absl::IsPermissionDenied(request.status()));
    EXPECT_THAT(request.status().message(),
                HasSubstr("NVIDIA_VISIBLE_DEVICES: device " + name +
                          ": only nvidia.com/gpu devices"));
  }
  RequestOptions other;
  other.vendor = "example.com";
  other.device_class = "accel";
  EXPECT_THAT(
      Names(Config({"NVIDIA_VISIBLE_DEVICES=example.com/accel=3"}), other),
      ElementsAre("example.com/accel=3"));
  EXPECT_FALSE(
      DetectRequest(Config({"NVIDIA_VISIBLE_DEVICES=nvidia.com/gpu=0"}), other)
          .ok());
  // Annotations come from the kubelet and may name any kind.
  json config = Config({});
  config["annotations"] = {
      {"cdi.k8s.io/claim", "k8s.gpu.nvidia.com/claim=0f3c-gpu-0"}};
  EXPECT_THAT(Names(config),
              ElementsAre("k8s.gpu.nvidia.com/claim=0f3c-gpu-0"));
}

TEST(RequestTest, BadNames) {
  json config = Config({});
  config["annotations"] = {{"cdi.k8s.io/x", "nvidia.com/gpu"}};
  absl::StatusOr<GpuRequest> request = DetectRequest(config, {});
  ASSERT_FALSE(request.ok());
  EXPECT_THAT(request.status().message(),
              HasSubstr("annotations[\"cdi.k8s.io/x\"]: CDI device "
                        "\"nvidia.com/gpu\" is not of the form"));
  request = DetectRequest(Config({"NVIDIA_VISIBLE_DEVICES=0,-bad"}), {});
  ASSERT_FALSE(request.ok());
  EXPECT_THAT(request.status().message(),
              HasSubstr("NVIDIA_VISIBLE_DEVICES: device -bad"));
}

TEST(RequestTest, SplitQualifiedName) {
  EXPECT_EQ(SplitQualifiedName("nvidia.com/gpu=0:1"),
            std::make_pair(std::string("nvidia.com/gpu"), std::string("0:1")));
}

}  // namespace
}  // namespace gpulet::runtime
