// The pod-resources client against a fake kubelet serving the v1 API on a
// unix socket in a temporary directory.
#include "src/net/podresources/client.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/net/testing/fake_kubelet.h"

namespace gpulet::podresources {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(kubelet_.socket_path().empty()); }

  FakeKubelet kubelet_;
  const std::string socket_ = kubelet_.socket_path();
};

TEST_F(ClientTest, ListsPodsWithTheirDevices) {
  v1::ListPodResourcesResponse list;
  v1::PodResources* pod = list.add_pod_resources();
  pod->set_namespace_("ns");
  pod->set_name("p");
  v1::ContainerResources* c = pod->add_containers();
  c->set_name("c");
  v1::ContainerDevices* d = c->add_devices();
  d->set_resource_name("nvidia.com/gpu-memory");
  d->add_device_ids("GPU-a::m0");
  d->add_device_ids("GPU-a::m1");
  pod->add_containers()->set_name("sidecar");
  v1::AllocatableResourcesResponse allocatable;
  v1::ContainerDevices* a = allocatable.add_devices();
  a->set_resource_name("nvidia.com/gpu-memory");
  a->add_device_ids("GPU-a::m0");
  kubelet_.Set(list, allocatable, grpc::Status::OK);

  Client client(socket_);
  auto pods = client.List();
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_THAT(*pods,
              ElementsAre(Pod{"ns",
                              "p",
                              {Container{"c",
                                         {Devices{"nvidia.com/gpu-memory",
                                                  {"GPU-a::m0", "GPU-a::m1"}}}},
                               Container{"sidecar", {}}}}));
  auto devices = client.Allocatable();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_THAT(*devices,
              ElementsAre(Devices{"nvidia.com/gpu-memory", {"GPU-a::m0"}}));
}

TEST_F(ClientTest, ErrorsNameTheSocketAndCall) {
  kubelet_.Set({}, {},
               grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "go away"));
  Client client(socket_);
  auto pods = client.List();
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(pods.status().message(), HasSubstr("pod resources List on "));
  EXPECT_THAT(pods.status().message(), HasSubstr("go away"));
}

TEST(Client, NoKubeletIsUnavailable) {
  Client client("/nonexistent/gpulet-pr.sock", absl::Seconds(5));
  auto pods = client.Allocatable();
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kUnavailable)
      << pods.status();
  EXPECT_THAT(pods.status().message(),
              HasSubstr("GetAllocatableResources on /nonexistent"));
}

}  // namespace
}  // namespace gpulet::podresources
