// NVIDIA-shaped configuration files, loaded unchanged, on one node: the
// resources they produce (names, device counts, replica IDs) and the full
// ContainerAllocateResponse each resource gives for a request, as NVIDIA's
// plugin answers it (REFERENCE.md, "AllocateResponse per device-list
// strategy" and "IDs and sharing"). The path from file to answer is the
// one the daemon takes: Resolve, BuildResources, AllocateOptionsFor,
// BuildAllocateResponse.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "src/base/config/parser.h"
#include "src/base/config/resolve.h"
#include "src/model/resources/resource_handlers.h"
#include "src/model/resources/resources.h"

namespace gpulet::resources {
namespace {

// GPU 0 and 1 whole A100s (minors 0, 1); GPU 2 with MIG enabled and two
// 1g.5gb devices (GI 7 and 8).
device::Node Node() {
  device::Node node;
  for (unsigned i = 0; i < 3; ++i) {
    device::Gpu g;
    g.index = i;
    g.minor = i;
    g.uuid = "GPU-" + std::to_string(i);
    g.name = "NVIDIA A100-SXM4-40GB";
    g.numa_node = 0;
    node.gpus.push_back(g);
  }
  node.gpus[2].mig_enabled = true;
  for (unsigned j = 0; j < 2; ++j) {
    device::MigDevice m;
    m.uuid = "MIG-2" + std::string(1, static_cast<char>('a' + j));
    m.parent_index = 2;
    m.mig_index = j;
    m.gpu_instance_id = 7 + j;
    m.profile = "1g.5gb";
    m.memory_bytes = 5u << 30;
    node.gpus[2].mig_devices.push_back(m);
  }
  return node;
}

struct Request {
  std::string resource;
  std::vector<std::string> ids;
  std::string want;   // text proto of the ContainerAllocateResponse, or
  std::string error;  // the expected error message
};

struct Case {
  std::string
      file;  // under src/base/config/testdata or src/model/resources/testdata
  std::map<std::string, int> resources;  // name -> device count
  std::vector<Request> requests;
};

std::string Path(const std::string& file) {
  std::string dir =
      absl::StrContains(file, "/") ? "" : "/src/base/config/testdata/";
  return std::string(GPULET_SOURCE_DIR) + dir + file;
}

const Case kCases[] = {
    {"plain-flags.yaml",
     {{"nvidia.com/gpu", 3}},
     {{"nvidia.com/gpu",
       {"GPU-1", "GPU-0"},
       R"pb(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "GPU-1,GPU-0" })pb",
       ""}}},
    {"time-slicing.yaml",
     {{"nvidia.com/gpu.shared", 30}},
     {{"nvidia.com/gpu.shared",
       {"GPU-2::9"},
       R"pb(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "GPU-2" })pb",
       ""},
      {"nvidia.com/gpu.shared",
       {"GPU-0::0", "GPU-1::3"},
       "",
       "invalid request: maximum request size for shared resources is 1; "
       "found 2"}}},
    {"mig-mixed.yaml",
     {{"nvidia.com/gpu", 4}, {"nvidia.com/mig-1g.5gb", 4}},
     {{"nvidia.com/mig-1g.5gb",
       {"MIG-2b::1", "MIG-2a::0", "MIG-2b::0"},
       R"pb(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "MIG-2b,MIG-2a" })pb",
       ""},
      {"nvidia.com/gpu",
       {"GPU-1::1"},
       R"pb(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "GPU-1" })pb",
       ""}}},
    {"cdi-string.yaml",
     {{"nvidia.com/gpu", 3}},
     {{"nvidia.com/gpu",
       {"GPU-0", "GPU-2"},
       R"pb(cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=GPU-0" }
            cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=GPU-2" })pb",
       ""}}},
    {"/src/model/resources/testdata/volume-mounts-specs.yaml",
     {{"nvidia.com/gpu", 3}},
     {{"nvidia.com/gpu",
       {"GPU-1"},
       R"pb(envs {
              key: "NVIDIA_VISIBLE_DEVICES"
              value: "/var/run/nvidia-container-devices"
            }
            envs { key: "NVIDIA_GDS" value: "enabled" }
            envs { key: "NVIDIA_MOFED" value: "enabled" }
            mounts {
              container_path: "/var/run/nvidia-container-devices/1"
              host_path: "/dev/null"
            }
            devices {
              container_path: "/dev/nvidia1"
              host_path: "/host/dev/nvidia1"
              permissions: "rw"
            })pb",
       ""},
      {"nvidia.com/gpu",
       {"GPU-7"},
       "",
       "invalid request: unknown device: GPU-7"}}},
};

TEST(NvidiaConfigsTest, ResourcesAndAllocateResponses) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.file);
    auto file = config::LoadConfigFile(Path(c.file));
    ASSERT_TRUE(file.ok()) << file.status();
    auto config = config::Resolve(
        {}, [](const std::string&) { return std::optional<std::string>(); },
        *file);
    ASSERT_TRUE(config.ok()) << config.status();
    auto specs = BuildResources(Node(), *config);
    ASSERT_TRUE(specs.ok()) << specs.status();
    std::map<std::string, int> got;
    std::map<std::string, const ResourceSpec*> by_name;
    for (const ResourceSpec& s : *specs) {
      got[s.resource_name] = static_cast<int>(s.devices.size());
      by_name[s.resource_name] = &s;
    }
    EXPECT_EQ(got, c.resources);
    // No control node exists under these roots, whatever the machine has.
    HostView view = MakeHostView(*config);
    view.probe_root = "/nonexistent-dev-root";
    view.own_root = "/nonexistent-own-root";
    for (const Request& r : c.requests) {
      SCOPED_TRACE(r.resource);
      ASSERT_TRUE(by_name.contains(r.resource));
      const ResourceSpec& spec = *by_name[r.resource];
      auto options = AllocateOptionsFor(*config, spec, view);
      ASSERT_TRUE(options.ok()) << options.status();
      pluginapi::DeviceSnapshot snapshot;
      snapshot.devices = spec.devices;
      auto response =
          allocation::BuildAllocateResponse(*options, snapshot, r.ids);
      if (!r.error.empty()) {
        ASSERT_FALSE(response.ok());
        EXPECT_EQ(response.status().message(), r.error);
        continue;
      }
      ASSERT_TRUE(response.ok()) << response.status();
      v1beta1::ContainerAllocateResponse want;
      ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(r.want, &want));
      EXPECT_TRUE(
          google::protobuf::util::MessageDifferencer::Equals(*response, want))
          << "got:\n"
          << response->DebugString() << "want:\n"
          << want.DebugString();
    }
  }
}

// cdi-annotations: one annotation "<prefix>nvidia-device-plugin_<id>" whose
// value lists the CDI names; with envvar also set, NVIDIA_VISIBLE_DEVICES
// carries the indexes.
TEST(NvidiaConfigsTest, CdiAnnotationsWithEnvvar) {
  auto file = config::LoadConfigFile(
      Path("/src/model/resources/testdata/envvar-cdi-annotations.yaml"));
  ASSERT_TRUE(file.ok()) << file.status();
  auto config = config::Resolve(
      {}, [](const std::string&) { return std::optional<std::string>(); },
      *file);
  ASSERT_TRUE(config.ok()) << config.status();
  config->flags.mig_strategy = config::MigStrategy::kMixed;
  auto specs = BuildResources(Node(), *config);
  ASSERT_TRUE(specs.ok()) << specs.status();
  const ResourceSpec& mig = (*specs)[1];
  ASSERT_EQ(mig.resource_name, "nvidia.com/mig-1g.5gb");
  auto options =
      AllocateOptionsFor(*config, mig, HostView{"/", "/nonexistent", "/"});
  ASSERT_TRUE(options.ok());
  pluginapi::DeviceSnapshot snapshot;
  snapshot.devices = mig.devices;
  auto response = allocation::BuildAllocateResponse(*options, snapshot,
                                                    {"MIG-2b", "MIG-2a"});
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->envs().at("NVIDIA_VISIBLE_DEVICES"), "2:1,2:0");
  ASSERT_EQ(response->annotations_size(), 1);
  const auto& [key, value] = *response->annotations().begin();
  EXPECT_TRUE(absl::StartsWith(key, "cdi.k8s.io/nvidia-device-plugin_")) << key;
  EXPECT_LE(key.size() - std::string("cdi.k8s.io/").size(), 63u);
  EXPECT_EQ(value,
            "k8s.device-plugin.nvidia.com/gpu=2:1,k8s.device-plugin.nvidia.com/"
            "gpu=2:0");
  EXPECT_EQ(response->cdi_devices_size(), 0);
}

}  // namespace
}  // namespace gpulet::resources
