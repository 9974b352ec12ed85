// Passthrough GPUs in a running `gpulet plugin`, against the fake kubelet
// and a sysfs/dev tree rendered from the vfio-groups profile: GPU 0 is on
// vfio-pci but its audio function is still on snd_hda_intel, so its group
// is not viable. It is advertised Unhealthy with the reason, becomes
// Healthy once the companion is bound to vfio-pci, and goes Unhealthy again,
// with Allocate refused naming the group, when its group node vanishes.
// With the simulator's fake kernel announcing each bind and unbind (a
// uevent) and no periodic re-read: a container GPU bound to vfio-pci leaves
// nvidia.com/gpu, and a passthrough GPU that leaves vfio-pci goes Unhealthy
// with the reason, both without SIGHUP.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "sim/fake_kernel.h"
#include "sim/sysfs_tree.h"
#include "src/gpu/testing/test_tree.h"
#include "test/integration/daemon_fake_kubelet.h"
#include "test/integration/daemon_process.h"
#include "test/integration/plugin_test_client.h"

namespace gpulet::testing {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(30);
constexpr char kGpu0[] = "0000:17:00.0";
constexpr char kAudio0[] = "0000:17:00.1";

// Reads messages until the newest satisfies `done`.
template <typename Done>
bool WaitForList(ListAndWatchReader& reader, Done done) {
  for (size_t n = 1;; ++n) {
    std::vector<v1beta1::ListAndWatchResponse> got = reader.WaitForMessages(n);
    if (got.size() < n) return false;
    if (done(got.back())) return true;
  }
}

// Reads messages until the newest has device `id` with `health`.
bool WaitForHealth(ListAndWatchReader& reader, const std::string& id,
                   const std::string& health) {
  return WaitForList(reader, [&](const v1beta1::ListAndWatchResponse& r) {
    for (const v1beta1::Device& d : r.devices()) {
      if (d.id() == id && d.health() == health) return true;
    }
    return false;
  });
}

bool Lists(const v1beta1::ListAndWatchResponse& r, const std::string& id) {
  for (const v1beta1::Device& d : r.devices()) {
    if (d.id() == id) return true;
  }
  return false;
}

class DaemonPassthroughTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tree_.Render("vfio-groups");
    ASSERT_TRUE(kubelet_.Start());
    std::ofstream(dir_.path() + "/config.yaml")
        << "version: v1\npassthrough:\n  sysRoot: " << tree_.root()
        << "/sys\n  devRoot: " << tree_.root()
        << "/dev\n  pciIds: \"\"\n  resyncPeriod: 1s\n";
  }

  // No periodic re-read: only inotify and the fake kernel's uevents.
  void UseUevents() {
    std::ofstream(dir_.path() + "/config.yaml")
        << "version: v1\npassthrough:\n  sysRoot: " << tree_.root()
        << "/sys\n  devRoot: " << tree_.root()
        << "/dev\n  pciIds: \"\"\n  ueventSocket: " << UeventSocket() << "\n";
  }
  std::string UeventSocket() const { return dir_.path() + "/uevent.sock"; }

  // As `gpulet vfio bind` moves one function: override, unbind, probe.
  void MoveToVfio(const std::string& address, const std::string& from) {
    tree_.Write(tree_.Pci(address) + "/driver_override", "vfio-pci");
    tree_.Write(tree_.root() + "/sys/bus/pci/drivers/" + from + "/unbind",
                address);
    tree_.Write(tree_.root() + "/sys/bus/pci/drivers_probe", address);
  }

  // The socket of `resource`.
  std::string SocketOf(const std::string& resource) const {
    for (const v1beta1::RegisterRequest& r : kubelet_.registrations()) {
      if (r.resource_name() == resource)
        return dir_.path() + "/" + r.endpoint();
    }
    return "";
  }

  std::unique_ptr<DaemonProcess> Start() {
    return std::make_unique<DaemonProcess>(
        "vfio-groups",
        std::vector<std::string>{"--config-file", dir_.path() + "/config.yaml",
                                 "--kubelet-socket", kubelet_.socket_path()},
        dir_.path() + "/gpulet.log");
  }

  // The socket of the resource that is not nvidia.com/gpu.
  std::string PassthroughSocket(std::string* resource) const {
    for (const v1beta1::RegisterRequest& r : kubelet_.registrations()) {
      if (r.resource_name() == "nvidia.com/gpu") continue;
      *resource = r.resource_name();
      return dir_.path() + "/" + r.endpoint();
    }
    return "";
  }

  // Moves the function from `from` to vfio-pci as the kernel does (the
  // driver link; the group node is there already for GPU 0, so only the
  // timed re-read can notice).
  void BindToVfio(const std::string& address, const std::string& from) {
    const sim::SysTree tree{tree_.root() + "/sys", tree_.root() + "/dev"};
    absl::Status s = sim::UnbindFunction(tree, address, from);
    ASSERT_TRUE(s.ok()) << s;
    s = sim::BindFunction(tree, address, "vfio-pci");
    ASSERT_TRUE(s.ok()) << s;
  }

  ShortTempDir dir_;
  vfio::testing::TestTree tree_;
  FakeKubelet kubelet_{dir_.path()};
};

TEST_F(DaemonPassthroughTest, NonViableGroupBecomesHealthyWhenCompanionBound) {
  std::unique_ptr<DaemonProcess> plugin = Start();
  // nvidia.com/gpu (GPUs 1-3 stay on nvidia) and the passthrough resource.
  ASSERT_TRUE(kubelet_.WaitForRegistrations(2, kTimeout)) << plugin->Log();
  std::string resource;
  const std::string socket = PassthroughSocket(&resource);
  ASSERT_FALSE(socket.empty()) << plugin->Log();
  auto stub = DialPlugin(socket);
  {
    ListAndWatchReader reader(*stub);
    std::vector<v1beta1::ListAndWatchResponse> first =
        reader.WaitForMessages(1);
    ASSERT_FALSE(first.empty());
    ASSERT_EQ(first[0].devices_size(), 1) << first[0].DebugString();
    EXPECT_EQ(first[0].devices(0).id(), kGpu0);
    EXPECT_EQ(first[0].devices(0).health(), "Unhealthy");
    EXPECT_TRUE(plugin->WaitForLog(
        absl::StrCat(kAudio0, " (audio, 10de:22e8) is bound to snd_hda_intel"),
        kTimeout))
        << plugin->Log();

    BindToVfio(kAudio0, "snd_hda_intel");
    EXPECT_TRUE(WaitForHealth(reader, kGpu0, "Healthy")) << plugin->Log();
  }

  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids(kGpu0);
  v1beta1::AllocateResponse response;
  grpc::Status ok = stub->Allocate(RpcContext().get(), request, &response);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  std::string env = "PCI_RESOURCE_" + resource;
  for (char& c : env) {
    c = (c == '.' || c == '/')
            ? '_'
            : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  EXPECT_EQ(response.container_responses(0).envs().at(env), kGpu0);

  // The group vanishes: Allocate is refused naming it, the device goes
  // Unhealthy.
  ListAndWatchReader reader(*stub);
  std::filesystem::remove(tree_.root() + "/dev/vfio/20");
  grpc::Status gone = stub->Allocate(RpcContext().get(), request, &response);
  EXPECT_FALSE(gone.ok());
  EXPECT_THAT(gone.error_message(),
              HasSubstr("IOMMU group 20 of 0000:17:00.0"));
  EXPECT_TRUE(WaitForHealth(reader, kGpu0, "Unhealthy")) << plugin->Log();
}

TEST_F(DaemonPassthroughTest, BindingChangesAreNoticedWithoutSighup) {
  UseUevents();
  std::unique_ptr<DaemonProcess> plugin = Start();
  ASSERT_TRUE(kubelet_.WaitForRegistrations(2, kTimeout)) << plugin->Log();
  sim::SysTree sys{tree_.root() + "/sys", tree_.root() + "/dev"};
  sys.uevent_socket = UeventSocket();
  absl::StatusOr<std::unique_ptr<sim::FakeKernel>> kernel =
      sim::FakeKernel::Start(sys);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  std::string resource;
  auto passthrough = DialPlugin(PassthroughSocket(&resource));
  auto containers = DialPlugin(SocketOf("nvidia.com/gpu"));
  ListAndWatchReader vms(*passthrough);
  ListAndWatchReader gpus(*containers);
  constexpr char kGpu1Uuid[] = "GPU-8c2d4e61-1f3a-5b70-9e42-7d5c0a6b3f18";
  constexpr char kGpu1[] = "0000:32:00.0";
  std::vector<v1beta1::ListAndWatchResponse> first = gpus.WaitForMessages(1);
  ASSERT_FALSE(first.empty());
  ASSERT_TRUE(Lists(first[0], kGpu1Uuid)) << first[0].DebugString();

  // GPU 1 alone to vfio-pci: its group (shared with GPU 2 and two audio
  // functions) stays unviable. It leaves nvidia.com/gpu and, selected by
  // "vfio-pci", joins the passthrough resource, Unhealthy.
  MoveToVfio(kGpu1, "nvidia");
  EXPECT_TRUE(WaitForList(gpus, [&](const v1beta1::ListAndWatchResponse& r) {
    return !Lists(r, kGpu1Uuid) && r.devices_size() == 2;
  })) << plugin->Log();
  EXPECT_TRUE(WaitForHealth(vms, kGpu1, "Unhealthy")) << plugin->Log();
  EXPECT_TRUE(plugin->WaitForLog(
      absl::StrCat("GPU ", kGpu1, " is now bound to vfio-pci"), kTimeout))
      << plugin->Log();

  // GPU 0's group made viable, then GPU 0 unbound from vfio-pci. Group
  // 20's node stays throughout (one of its functions is always on
  // vfio-pci): only the uevents tell.
  MoveToVfio(kAudio0, "snd_hda_intel");
  EXPECT_TRUE(WaitForHealth(vms, kGpu0, "Healthy")) << plugin->Log();
  tree_.Write(tree_.root() + "/sys/bus/pci/drivers/vfio-pci/unbind", kGpu0);
  EXPECT_TRUE(WaitForHealth(vms, kGpu0, "Unhealthy")) << plugin->Log();
  EXPECT_TRUE(plugin->WaitForLog(
      absl::StrCat("passthrough GPU ", kGpu0, " is unhealthy: IOMMU group 20: ",
                   kGpu0, " (GPU, 10de:2bb5) is bound to no driver"),
      kTimeout))
      << plugin->Log();
  EXPECT_TRUE((*kernel)->Errors().empty());
}

}  // namespace
}  // namespace gpulet::testing
