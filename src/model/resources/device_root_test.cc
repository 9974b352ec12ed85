// passDeviceSpecs in every driver/dev-root layout NVIDIA's Helm chart and
// the GPU operator use, with NVIDIA k8s-device-plugin v0.20's answer as the
// expected value. NVIDIA (internal/plugin/server.go apiDeviceSpecs) keeps a
// control node iff os.Stat("/dev/<node>") succeeds in its own container
// and answers filepath.Join(flags.nvidiaDevRoot, path) as the host path,
// for every path including /dev/nvidia<minor>.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "src/model/resources/resource_handlers.h"

namespace gpulet::resources {
namespace {

// A temporary "own root" holding dev/<name> for each of `nodes` (plain
// files: NVIDIA only stats them).
class OwnRoot {
 public:
  explicit OwnRoot(const std::vector<std::string>& nodes) {
    char tmpl[] = "/tmp/gpulet-devroot-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    EXPECT_NE(made, nullptr);
    dir_ = made == nullptr ? "" : made;
    std::filesystem::create_directories(dir_ + "/dev");
    for (const std::string& node : nodes) {
      int fd =
          ::open((dir_ + "/dev/" + node).c_str(), O_CREAT | O_WRONLY, 0600);
      EXPECT_GE(fd, 0) << node;
      if (fd >= 0) ::close(fd);
    }
  }
  ~OwnRoot() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

ResourceSpec OneGpu() {
  ResourceSpec spec;
  spec.resource_name = "nvidia.com/gpu";
  pluginapi::Device d;
  d.id = "GPU-0";
  d.device_nodes = {"/dev/nvidia0"};
  spec.devices.push_back(d);
  return spec;
}

std::string Specs(const std::string& dev,
                  const std::vector<std::string>& paths) {
  std::string text =
      "envs { key: \"NVIDIA_VISIBLE_DEVICES\" value: \"GPU-0\" }\n";
  for (const std::string& p : paths) {
    text += "devices { container_path: \"" + p + "\" host_path: \"" + dev + p +
            "\" permissions: \"rw\" }\n";
  }
  return text;
}

const std::vector<std::string> kAllNodes = {
    "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "nvidia0"};
const std::vector<std::string> kAllPaths = {
    "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset", "/dev/nvidia0"};

struct Layout {
  std::string name;
  std::string driver_root;           // flags.nvidiaDriverRoot
  std::string dev_root;              // flags.nvidiaDevRoot, "" = unset
  std::vector<std::string> own_dev;  // nodes in the plugin's own /dev
  std::string want;                  // NVIDIA v0.20's ContainerAllocateResponse
};

TEST(DeviceRootTest, PassDeviceSpecsAnswersAsNvidiaInEveryLayout) {
  const Layout layouts[] = {
      {"host driver (chart default)", "/", "", kAllNodes, Specs("", kAllPaths)},
      {"driver container, /dev inside its root (operator, devRoot unset)",
       "/run/nvidia/driver", "", kAllNodes,
       Specs("/run/nvidia/driver", kAllPaths)},
      {"driver container, /dev on the host (operator, devRoot=/)",
       "/run/nvidia/driver", "/", kAllNodes, Specs("", kAllPaths)},
      {"devRoot apart from driverRoot (NVIDIA_DEV_ROOT=/host)", "/", "/host",
       kAllNodes, Specs("/host", kAllPaths)},
      {"devRoot apart from a driver container root", "/run/nvidia/driver",
       "/host", kAllNodes, Specs("/host", kAllPaths)},
      {"nvidia-uvm not loaded yet",
       "/",
       "/host",
       {"nvidiactl", "nvidia-modeset", "nvidia0"},
       Specs("/host",
             {"/dev/nvidiactl", "/dev/nvidia-modeset", "/dev/nvidia0"})},
      {"no control node visible to the plugin: the GPU node still goes out",
       "/",
       "/host",
       {},
       Specs("/host", {"/dev/nvidia0"})},
  };
  for (const Layout& l : layouts) {
    SCOPED_TRACE(l.name);
    OwnRoot own(l.own_dev);
    config::Config config;
    config.flags.nvidia_driver_root = l.driver_root;
    config.flags.nvidia_dev_root = l.dev_root;
    config.flags.plugin.pass_device_specs = true;
    config.flags.plugin.container_driver_root = "/nonexistent-driver-root";
    HostView view = MakeHostView(config);
    view.own_root = own.dir();
    const ResourceSpec spec = OneGpu();
    auto options = AllocateOptionsFor(config, spec, view);
    ASSERT_TRUE(options.ok()) << options.status();
    pluginapi::DeviceSnapshot snapshot;
    snapshot.devices = spec.devices;
    auto response =
        allocation::BuildAllocateResponse(*options, snapshot, {"GPU-0"});
    ASSERT_TRUE(response.ok()) << response.status();
    v1beta1::ContainerAllocateResponse want;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(l.want, &want));
    EXPECT_TRUE(
        google::protobuf::util::MessageDifferencer::Equals(*response, want))
        << "got:\n"
        << response->DebugString() << "want:\n"
        << want.DebugString();
  }
}

// The dev root as the plugin would see it through a mount is not where
// NVIDIA looks: nodes under <own root>/host/dev alone do not count.
TEST(DeviceRootTest, NodesOnlyUnderTheDevRootDoNotCount) {
  OwnRoot own({});
  std::filesystem::create_directories(own.dir() + "/host/dev");
  for (const char* n : {"nvidiactl", "nvidia-uvm"}) {
    int fd = ::open((own.dir() + "/host/dev/" + n).c_str(), O_CREAT | O_WRONLY,
                    0600);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  config::Config config;
  config.flags.nvidia_dev_root = own.dir() + "/host";
  config.flags.plugin.pass_device_specs = true;
  config.flags.plugin.container_driver_root = "/nonexistent-driver-root";
  HostView view = MakeHostView(config);
  view.own_root = own.dir();
  auto options = AllocateOptionsFor(config, OneGpu(), view);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->control_nodes_probe().empty());
}

}  // namespace
}  // namespace gpulet::resources
