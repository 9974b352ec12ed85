// PluginServer under repetition and garbage: many kubelet-restart cycles
// must not leak, and no request, however malformed, may crash the server or
// get any answer but OK or INVALID_ARGUMENT.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "src/base/common/logging.h"
#include "src/model/allocation/allocate_response.h"
#include "src/model/allocation/simple_preferred.h"
#include "src/plugin/server/plugin_server.h"
#include "test/integration/plugin_test_client.h"

namespace gpulet::plugin {
namespace {

using allocation::EnvvarResponse;
using allocation::SimplePreferred;
using ::gpulet::testing::DialPlugin;
using ::gpulet::testing::ListAndWatchReader;
using ::gpulet::testing::OpenFdCount;
using ::gpulet::testing::RpcContext;
using pluginapi::Device;

std::vector<Device> Devices() {
  std::vector<Device> out;
  for (int i = 0; i < 8; ++i) {
    std::string uuid = "GPU-" + std::to_string(i);
    for (int r = 0; r < 2; ++r) {
      Device d;
      d.id = uuid + "::" + std::to_string(r);
      d.healthy = i % 3 != 2;
      d.numa_nodes = {i < 4 ? 0 : 1};
      d.visible_id = uuid;
      d.gpu_index = i;
      d.replica = r;
      out.push_back(std::move(d));
    }
  }
  return out;
}

// One start, a kubelet-like session (options, a stream, an Allocate), stop.
void Cycle(PluginServer& server, const std::string& dir) {
  ASSERT_TRUE(server.Start(dir).ok());
  auto stub = DialPlugin(server.socket_path());
  v1beta1::DevicePluginOptions options;
  ASSERT_TRUE(stub->GetDevicePluginOptions(RpcContext().get(), v1beta1::Empty(),
                                           &options)
                  .ok());
  ListAndWatchReader reader(*stub);
  ASSERT_EQ(reader.WaitForMessages(1).size(), 1u);
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("GPU-0::1");
  v1beta1::AllocateResponse response;
  ASSERT_TRUE(stub->Allocate(RpcContext().get(), request, &response).ok());
  server.Stop();
  ASSERT_TRUE(reader.WaitForEnd().has_value());
}

// The client's channel closes its socket asynchronously; wait (bounded)
// for the count to come down instead of sleeping a fixed time.
int SettledFdCount(int at_most) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  int count = OpenFdCount();
  while (count > at_most && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
    count = OpenFdCount();
  }
  return count;
}

TEST(PluginServerStressTest, FiftyStartStopCyclesLeakNoFds) {
  gpulet::testing::ShortTempDir dir;
  DeviceList devices(Devices());
  PluginServer server({"nvidia.com/gpu", "gpulet-gpu.sock"}, devices,
                      EnvvarResponse, SimplePreferred);
  // gRPC's process-wide state (timers, executors) appears on first use.
  Cycle(server, dir.path());
  const int baseline = OpenFdCount();
  for (int i = 0; i < 50; ++i) {
    SCOPED_TRACE(i);
    Cycle(server, dir.path());
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_LE(SettledFdCount(baseline), baseline);
}

// Stopping while the list keeps changing (writes in flight as the server
// shuts down) and while clients keep opening streams and cancelling them:
// completions drained after the queue was shut down must not start new work
// on it (gRPC aborts the process when they do), and every stream must end.
TEST(PluginServerStressTest, StopsWhileTheListChangesAndClientsComeAndGo) {
  gpulet::testing::ShortTempDir dir;
  DeviceList devices(Devices());
  PluginServer server({"nvidia.com/gpu", "gpulet-gpu.sock"}, devices,
                      EnvvarResponse, SimplePreferred);
  std::atomic<bool> churn{true};
  std::jthread changer([&] {
    std::vector<Device> list = Devices();
    for (int n = 0; churn.load(); ++n) {
      list[n % list.size()].healthy = !list[n % list.size()].healthy;
      devices.Replace(list);
      absl::SleepFor(absl::Microseconds(200));
    }
  });
  for (int i = 0; i < 30; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(server.Start(dir.path()).ok());
    auto stub = DialPlugin(server.socket_path());
    std::vector<std::unique_ptr<ListAndWatchReader>> readers;
    for (int r = 0; r < 3; ++r) {
      readers.push_back(std::make_unique<ListAndWatchReader>(*stub));
    }
    ASSERT_FALSE(readers[0]->WaitForMessages(2).empty());
    readers[1]->Cancel();
    // One more stream races the stop.
    readers.push_back(std::make_unique<ListAndWatchReader>(*stub));
    server.Stop();
    for (auto& reader : readers) {
      EXPECT_TRUE(reader->WaitForEnd().has_value());
    }
  }
  churn = false;
}

// Random IDs: known ones, near misses, empty, long, odd characters.
std::string RandomId(std::mt19937& rng) {
  static const std::vector<Device> known = Devices();
  switch (rng() % 6) {
    case 0:
    case 1:
    case 2:
      return known[rng() % known.size()].id;
    case 3:
      return "GPU-" + std::to_string(rng() % 12);
    case 4:
      return "";
    default: {
      // Valid UTF-8 only: proto3 strings must be, and the kubelet's Go
      // client cannot send anything else.
      static const std::vector<std::string> pieces = {"a",
                                                      "Z",
                                                      "0",
                                                      "-",
                                                      ":",
                                                      "/",
                                                      " ",
                                                      ",",
                                                      "\"",
                                                      "\xc3\xa9",
                                                      "\xe2\x82\xac",
                                                      "GPU-",
                                                      "MIG-",
                                                      "::"};
      std::string id;
      for (int n = rng() % 40; n > 0; --n) id += pieces[rng() % pieces.size()];
      return id;
    }
  }
}

std::vector<std::string> RandomIds(std::mt19937& rng, int max) {
  std::vector<std::string> ids(rng() % (max + 1));
  for (std::string& id : ids) id = RandomId(rng);
  return ids;
}

class PluginGarbageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    null_fd_ = open("/dev/null", O_WRONLY | O_CLOEXEC);
    ASSERT_GE(null_fd_, 0);
    common::SetLogFd(null_fd_);  // 2000 rejections would flood the log
  }
  void TearDown() override {
    common::SetLogFd(2);
    close(null_fd_);
  }
  int null_fd_ = -1;
};

TEST_F(PluginGarbageTest, RandomRequestsGetOkOrInvalidArgument) {
  gpulet::testing::ShortTempDir dir;
  DeviceList devices(Devices());
  PluginServer server({"nvidia.com/gpu", "gpulet-gpu.sock"}, devices,
                      EnvvarResponse, SimplePreferred);
  ASSERT_TRUE(server.Start(dir.path()).ok());
  auto stub = DialPlugin(server.socket_path());
  std::mt19937 rng(20240607);
  int ok = 0;
  for (int i = 0; i < 2000; ++i) {
    grpc::Status s;
    int want_responses = 0;
    int got_responses = 0;
    if (rng() % 2 == 0) {
      v1beta1::AllocateRequest request;
      want_responses = rng() % 3;
      for (int c = 0; c < want_responses; ++c) {
        auto* container = request.add_container_requests();
        for (auto& id : RandomIds(rng, 5)) container->add_devices_ids(id);
      }
      v1beta1::AllocateResponse response;
      s = stub->Allocate(RpcContext().get(), request, &response);
      got_responses = response.container_responses_size();
    } else {
      v1beta1::PreferredAllocationRequest request;
      want_responses = rng() % 3;
      for (int c = 0; c < want_responses; ++c) {
        auto* container = request.add_container_requests();
        for (auto& id : RandomIds(rng, 10))
          container->add_available_deviceids(id);
        for (auto& id : RandomIds(rng, 3))
          container->add_must_include_deviceids(id);
        container->set_allocation_size(static_cast<int>(rng() % 12) - 2);
      }
      v1beta1::PreferredAllocationResponse response;
      s = stub->GetPreferredAllocation(RpcContext().get(), request, &response);
      got_responses = response.container_responses_size();
    }
    ASSERT_TRUE(s.ok() || s.error_code() == grpc::StatusCode::INVALID_ARGUMENT)
        << "request " << i << ": " << s.error_code() << " "
        << s.error_message();
    if (s.ok()) {
      ++ok;
      ASSERT_EQ(got_responses, want_responses) << "request " << i;
    }
  }
  EXPECT_GT(ok, 100);  // the generator must also exercise the happy path
  EXPECT_TRUE(server.running());
}

}  // namespace
}  // namespace gpulet::plugin
