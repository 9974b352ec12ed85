// PluginServer with handlers that wait on the network (handlers_wait, the
// memory-unit resource): an Allocate whose handler waits holds up neither
// the resource's ListAndWatch updates nor its other calls, nor another
// resource's server; the handler's wait is stopped before the call's
// deadline, so its own error reaches the kubelet.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "src/model/allocation/allocate_response.h"
#include "src/model/allocation/simple_preferred.h"
#include "src/model/pluginapi/call_scope.h"
#include "src/plugin/server/plugin_server.h"
#include "test/integration/plugin_test_client.h"

namespace gpulet::plugin {
namespace {

using ::gpulet::testing::DialPlugin;
using ::gpulet::testing::ListAndWatchReader;
using ::gpulet::testing::RpcContext;
using pluginapi::Device;
using ::testing::HasSubstr;

std::vector<Device> Units(int n) {
  std::vector<Device> out;
  for (int k = 0; k < n; ++k) {
    const std::string id = "GPU-a::m" + std::to_string(k);
    out.push_back({id, true, {0}, "GPU-a", 0});
  }
  return out;
}

// Waits until the call's time is up, or until the test lets it go.
void WaitForStopOr(absl::Notification& release) {
  absl::Notification stopped;
  std::stop_callback on_stop(pluginapi::CurrentCallStop(),
                             [&] { stopped.Notify(); });
  while (!stopped.HasBeenNotified() && !release.HasBeenNotified()) {
    stopped.WaitForNotificationWithTimeout(absl::Milliseconds(20));
  }
}

class WaitingHandlersTest : public ::testing::Test {
 protected:
  WaitingHandlersTest()
      : units_(Units(4)),
        gpus_({{"GPU-a", true, {0}, "GPU-a", 0}}),
        memory_(
            PluginOptions{.resource_name = "nvidia.com/gpu-memory",
                          .socket_name = "m.sock",
                          .handlers_wait = true},
            units_,
            [this](const pluginapi::DeviceSnapshot& snapshot,
                   const std::vector<std::string>& ids)
                -> absl::StatusOr<v1beta1::ContainerAllocateResponse> {
              entered_.Notify();
              WaitForStopOr(release_);
              if (pluginapi::CurrentCallStop().stop_requested()) {
                return absl::DeadlineExceededError(
                    "node n1: the placement was not written in time");
              }
              return allocation::EnvvarResponse(snapshot, ids);
            },
            allocation::SimplePreferred),
        gpu_(PluginOptions{"nvidia.com/gpu", "g.sock"}, gpus_,
             allocation::EnvvarResponse, allocation::SimplePreferred) {}

  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ASSERT_TRUE(memory_.Start(dir_.path()).ok());
    ASSERT_TRUE(gpu_.Start(dir_.path()).ok());
  }

  static grpc::Status Allocate(v1beta1::DevicePlugin::Stub& stub,
                               const std::string& id, absl::Duration deadline) {
    v1beta1::AllocateRequest request;
    request.add_container_requests()->add_devices_ids(id);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    v1beta1::AllocateResponse response;
    return stub.Allocate(&context, request, &response);
  }

  gpulet::testing::ShortTempDir dir_;
  DeviceList units_;
  DeviceList gpus_;
  absl::Notification entered_;
  absl::Notification release_;
  PluginServer memory_;
  PluginServer gpu_;
};

TEST_F(WaitingHandlersTest, AWaitingAllocateHoldsUpNothingElse) {
  auto memory = DialPlugin(memory_.socket_path());
  ListAndWatchReader reader(*memory);
  ASSERT_EQ(reader.WaitForMessages(1).size(), 1u);

  grpc::Status waited;
  std::jthread call(
      [&] { waited = Allocate(*memory, "GPU-a::m0", absl::Seconds(60)); });
  ASSERT_TRUE(entered_.WaitForNotificationWithTimeout(absl::Seconds(30)));

  // The handler waits until released: all of this is served meanwhile.
  units_.SetHealth("GPU-a::m3", false);
  auto messages = reader.WaitForMessages(2);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].devices(3).health(), "Unhealthy");
  v1beta1::DevicePluginOptions options;
  EXPECT_TRUE(memory
                  ->GetDevicePluginOptions(RpcContext().get(), v1beta1::Empty(),
                                           &options)
                  .ok());
  auto gpu = DialPlugin(gpu_.socket_path());
  EXPECT_TRUE(Allocate(*gpu, "GPU-a", absl::Seconds(30)).ok());

  release_.Notify();
  call.join();
  EXPECT_TRUE(waited.ok()) << waited.error_message();
}

TEST_F(WaitingHandlersTest, TheWaitEndsBeforeTheDeadlineWithItsOwnError) {
  auto memory = DialPlugin(memory_.socket_path());
  const grpc::Status s = Allocate(*memory, "GPU-a::m1", absl::Seconds(4));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The handler's message, not the transport's "deadline exceeded".
  EXPECT_THAT(s.error_message(),
              HasSubstr("allocation for \"nvidia.com/gpu-memory\": node n1: "
                        "the placement was not written in time"));
}

TEST_F(WaitingHandlersTest, StopEndsAWaitingCall) {
  auto memory = DialPlugin(memory_.socket_path());
  grpc::Status waited;
  std::jthread call(
      [&] { waited = Allocate(*memory, "GPU-a::m2", absl::Seconds(60)); });
  ASSERT_TRUE(entered_.WaitForNotificationWithTimeout(absl::Seconds(30)));
  memory_.Stop();  // returns: the handler's wait was stopped
  call.join();
  EXPECT_EQ(waited.error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace gpulet::plugin
