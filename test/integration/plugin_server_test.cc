// PluginServer over a real unix socket, driven by a C++ gRPC client the way
// the kubelet drives a device plugin.
#include "src/plugin/server/plugin_server.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "src/model/allocation/allocate_response.h"
#include "src/model/allocation/simple_preferred.h"
#include "test/integration/plugin_test_client.h"

namespace gpulet::plugin {
namespace {

using allocation::EnvvarResponse;
using allocation::SimplePreferred;
using ::gpulet::testing::DialPlugin;
using ::gpulet::testing::ListAndWatchReader;
using ::gpulet::testing::RpcContext;
using pluginapi::Device;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<Device> FourGpus() {
  return {{"GPU-0", true, {0}, "GPU-0", 0},
          {"GPU-1", true, {0}, "GPU-1", 1},
          {"GPU-2", true, {1}, "GPU-2", 2},
          {"GPU-3", true, {1}, "GPU-3", 3}};
}

std::vector<std::string> Health(const v1beta1::ListAndWatchResponse& r) {
  std::vector<std::string> out;
  for (const auto& d : r.devices()) out.push_back(d.id() + "=" + d.health());
  return out;
}

class PluginServerTest : public ::testing::Test {
 protected:
  PluginServerTest()
      : devices_(FourGpus()),
        server_(PluginOptions{"nvidia.com/gpu", "gpulet-gpu.sock"}, devices_,
                EnvvarResponse, SimplePreferred) {}

  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ASSERT_TRUE(server_.Start(dir_.path()).ok());
    stub_ = DialPlugin(server_.socket_path());
  }

  grpc::Status Allocate(std::vector<std::string> ids,
                        v1beta1::AllocateResponse* response) {
    v1beta1::AllocateRequest request;
    auto* c = request.add_container_requests();
    for (const auto& id : ids) c->add_devices_ids(id);
    return stub_->Allocate(RpcContext().get(), request, response);
  }

  grpc::Status Preferred(std::vector<std::string> available,
                         std::vector<std::string> must, int size,
                         v1beta1::PreferredAllocationResponse* response) {
    v1beta1::PreferredAllocationRequest request;
    auto* c = request.add_container_requests();
    for (const auto& id : available) c->add_available_deviceids(id);
    for (const auto& id : must) c->add_must_include_deviceids(id);
    c->set_allocation_size(size);
    return stub_->GetPreferredAllocation(RpcContext().get(), request, response);
  }

  gpulet::testing::ShortTempDir dir_;
  DeviceList devices_;
  PluginServer server_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
};

TEST_F(PluginServerTest, ServesOptionsOnASocketOnlyItsOwnerMayUse) {
  EXPECT_TRUE(server_.running());
  EXPECT_EQ(server_.socket_path(), dir_.path() + "/gpulet-gpu.sock");
  struct stat st;
  ASSERT_EQ(stat(server_.socket_path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  v1beta1::DevicePluginOptions options;
  grpc::Status s = stub_->GetDevicePluginOptions(RpcContext().get(),
                                                 v1beta1::Empty(), &options);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(options.get_preferred_allocation_available());
  EXPECT_FALSE(options.pre_start_required());

  v1beta1::PreStartContainerResponse pre_start;
  EXPECT_TRUE(stub_
                  ->PreStartContainer(RpcContext().get(),
                                      v1beta1::PreStartContainerRequest(),
                                      &pre_start)
                  .ok());
}

TEST_F(PluginServerTest, ListAndWatchSendsTheFullListThenEveryChange) {
  ListAndWatchReader reader(*stub_);
  auto messages = reader.WaitForMessages(1);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_THAT(Health(messages[0]),
              ElementsAre("GPU-0=Healthy", "GPU-1=Healthy", "GPU-2=Healthy",
                          "GPU-3=Healthy"));
  EXPECT_EQ(messages[0].devices(2).topology().nodes(0).id(), 1);

  devices_.SetGpuHealth(1, false);
  messages = reader.WaitForMessages(2);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_THAT(Health(messages[1]),
              ElementsAre("GPU-0=Healthy", "GPU-1=Unhealthy", "GPU-2=Healthy",
                          "GPU-3=Healthy"));

  std::vector<Device> two = FourGpus();
  two.resize(2);
  devices_.Replace(two);
  messages = reader.WaitForMessages(3);
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_THAT(Health(messages[2]),
              ElementsAre("GPU-0=Healthy", "GPU-1=Healthy"));
}

TEST_F(PluginServerTest, ConcurrentStreamsAllGetUpdatesAndEndOnStop) {
  ListAndWatchReader first(*stub_);
  ListAndWatchReader second(*stub_);
  ASSERT_EQ(first.WaitForMessages(1).size(), 1u);
  ASSERT_EQ(second.WaitForMessages(1).size(), 1u);

  devices_.SetHealth("GPU-3", false);
  for (ListAndWatchReader* r : {&first, &second}) {
    auto messages = r->WaitForMessages(2);
    ASSERT_EQ(messages.size(), 2u);
    EXPECT_EQ(messages[1].devices(3).health(), "Unhealthy");
  }

  server_.Stop();
  EXPECT_FALSE(server_.running());
  for (ListAndWatchReader* r : {&first, &second}) {
    std::optional<grpc::Status> end = r->WaitForEnd();
    ASSERT_TRUE(end.has_value()) << "stream still open after Stop()";
  }
  struct stat st;
  EXPECT_NE(stat(server_.socket_path().c_str(), &st), 0)
      << "socket left behind";
  // The shared list is not closed by one server stopping.
  EXPECT_FALSE(devices_.closed());
}

TEST_F(PluginServerTest, StreamEndsWhenTheDeviceListCloses) {
  ListAndWatchReader reader(*stub_);
  ASSERT_EQ(reader.WaitForMessages(1).size(), 1u);
  devices_.Close();
  std::optional<grpc::Status> end = reader.WaitForEnd();
  ASSERT_TRUE(end.has_value());
  EXPECT_TRUE(end->ok()) << end->error_message();
}

TEST_F(PluginServerTest, CancelledStreamDoesNotHoldUpStop) {
  {
    ListAndWatchReader reader(*stub_);
    ASSERT_EQ(reader.WaitForMessages(1).size(), 1u);
    reader.Cancel();
    ASSERT_TRUE(reader.WaitForEnd().has_value());
  }
  server_.Stop();
  EXPECT_FALSE(server_.running());
}

TEST_F(PluginServerTest, CancelledStreamStopsWatchingTheList) {
  ListAndWatchReader reader(*stub_);
  ASSERT_EQ(reader.WaitForMessages(1).size(), 1u);
  EXPECT_EQ(devices_.watcher_count(), 1u);
  reader.Cancel();
  ASSERT_TRUE(reader.WaitForEnd().has_value());
  // gRPC reports the cancel to the server on its own: no write, no poll.
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (devices_.watcher_count() != 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(devices_.watcher_count(), 0u);
  EXPECT_TRUE(server_.running());
}

TEST_F(PluginServerTest, AllocateSetsVisibleDevices) {
  v1beta1::AllocateResponse response;
  grpc::Status s = Allocate({"GPU-2", "GPU-0"}, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(response.container_responses_size(), 1);
  EXPECT_EQ(response.container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"),
            "GPU-2,GPU-0");
}

TEST_F(PluginServerTest, AllocateUnknownIdIsInvalidArgumentNamingIt) {
  for (const std::vector<std::string>& ids :
       {std::vector<std::string>{"GPU-nope"},
        std::vector<std::string>{"GPU-1", "GPU-nope"}}) {
    v1beta1::AllocateResponse response;
    grpc::Status s = Allocate(ids, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(),
              "invalid allocation request for \"nvidia.com/gpu\": invalid "
              "request: unknown "
              "device: GPU-nope");
  }
  v1beta1::AllocateResponse response;
  grpc::Status s = Allocate({}, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(PluginServerTest, PreferredAllocationAnswersAndRejects) {
  v1beta1::PreferredAllocationResponse response;
  grpc::Status s = Preferred({"GPU-0", "GPU-2", "GPU-3"}, {}, 2, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_THAT(response.container_responses(0).deviceids(),
              ElementsAre("GPU-2", "GPU-3"));

  s = Preferred({"GPU-0", "GPU-1", "GPU-3"}, {"GPU-3"}, 2, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_THAT(response.container_responses(0).deviceids(),
              ElementsAre("GPU-3", "GPU-0"));

  s = Preferred({"GPU-0", "GPU-x"}, {}, 1, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("unknown device: GPU-x"));
  s = Preferred({"GPU-0"}, {}, 2, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("allocation_size 2"));
  s = Preferred({"GPU-0"}, {"GPU-1"}, 1, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("GPU-1"));
  s = Preferred({"GPU-0"}, {}, 0, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(PluginServerTest, StartWhileRunningIsRefused) {
  absl::Status s = server_.Start(dir_.path());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(server_.running());
}

TEST_F(PluginServerTest, RestartsAfterStopAndServesAgain) {
  server_.Stop();
  ASSERT_TRUE(server_.Start(dir_.path()).ok());
  auto stub = DialPlugin(server_.socket_path());
  ListAndWatchReader reader(*stub);
  ASSERT_EQ(reader.WaitForMessages(1).size(), 1u);
  v1beta1::AllocateResponse response;
  stub_ = std::move(stub);
  EXPECT_TRUE(Allocate({"GPU-1"}, &response).ok());
}

// The runs on_unwatched reported, in order.
class UnwatchedRuns {
 public:
  std::function<void(uint64_t)> Callback() {
    return [this](uint64_t run) {
      absl::MutexLock lock(&mu_);
      runs_.push_back(run);
    };
  }
  std::vector<uint64_t> runs() {
    absl::MutexLock lock(&mu_);
    return runs_;
  }
  // Waits until `n` were reported (at most 20 s); returns them all.
  std::vector<uint64_t> WaitFor(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&] {
      mu_.AssertHeld();
      return runs_.size() >= n;
    };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(20));
    return runs_;
  }

 private:
  absl::Mutex mu_;
  std::vector<uint64_t> runs_ ABSL_GUARDED_BY(mu_);
};

// Waits until the server dropped the watchers of ended streams (the
// watcher goes after the stream's end was counted).
bool WaitForWatchers(const DeviceList& devices, size_t n) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (devices.watcher_count() != n && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  return devices.watcher_count() == n;
}

TEST(PluginServerUnwatchedTest, ReportsTheRunWhoseLastStreamTheClientEnded) {
  gpulet::testing::ShortTempDir dir;
  DeviceList devices(FourGpus());
  UnwatchedRuns unwatched;
  PluginOptions options{"nvidia.com/gpu", "gpulet-gpu.sock"};
  options.on_unwatched = unwatched.Callback();
  PluginServer server(options, devices, EnvvarResponse, SimplePreferred);
  EXPECT_EQ(server.run(), 0u);
  ASSERT_TRUE(server.Start(dir.path()).ok());
  EXPECT_EQ(server.run(), 1u);
  auto stub = DialPlugin(server.socket_path());
  {
    ListAndWatchReader kubelet(*stub);
    ListAndWatchReader other(*stub);
    ASSERT_EQ(kubelet.WaitForMessages(1).size(), 1u);
    ASSERT_EQ(other.WaitForMessages(1).size(), 1u);
    other.Cancel();
    ASSERT_TRUE(WaitForWatchers(devices, 1));
    EXPECT_THAT(unwatched.runs(), ::testing::IsEmpty())
        << "a stream is still open";
    kubelet.Cancel();
    EXPECT_THAT(unwatched.WaitFor(1), ElementsAre(1u));
  }

  // Streams the server ends are its own doing: Stop, and a closed list.
  server.Stop();
  ASSERT_TRUE(server.Start(dir.path()).ok());
  EXPECT_EQ(server.run(), 2u);
  stub = DialPlugin(server.socket_path());
  {
    ListAndWatchReader reader(*stub);
    ASSERT_EQ(reader.WaitForMessages(1).size(), 1u);
    server.Stop();
    ASSERT_TRUE(reader.WaitForEnd().has_value());
  }
  EXPECT_EQ(server.run(), 2u) << "kept after Stop";
  ASSERT_TRUE(server.Start(dir.path()).ok());
  stub = DialPlugin(server.socket_path());
  {
    ListAndWatchReader reader(*stub);
    ASSERT_EQ(reader.WaitForMessages(1).size(), 1u);
    devices.Close();
    ASSERT_TRUE(reader.WaitForEnd().has_value());
  }
  // Stop joins the server's loop: every stream's end was counted by now.
  server.Stop();
  EXPECT_THAT(unwatched.runs(), ElementsAre(1u));
}

TEST(PluginServerStartTest, ReplacesAStaleSocketFile) {
  gpulet::testing::ShortTempDir dir;
  const std::string path = dir.path() + "/gpulet-gpu.sock";
  ASSERT_TRUE(gpulet::testing::MakeStaleSocket(path));
  DeviceList devices(FourGpus());
  PluginServer server({"nvidia.com/gpu", "gpulet-gpu.sock"}, devices,
                      EnvvarResponse, SimplePreferred);
  absl::Status started = server.Start(dir.path());
  ASSERT_TRUE(started.ok()) << started;
  v1beta1::DevicePluginOptions options;
  EXPECT_TRUE(DialPlugin(path)
                  ->GetDevicePluginOptions(RpcContext().get(), v1beta1::Empty(),
                                           &options)
                  .ok());
}

TEST(PluginServerStartTest, ErrorsNameThePath) {
  gpulet::testing::ShortTempDir dir;
  DeviceList devices(FourGpus());
  PluginServer server({"nvidia.com/gpu", "gpulet-gpu.sock"}, devices,
                      EnvvarResponse, SimplePreferred);

  absl::Status s = server.Start(dir.path() + "/missing");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr(dir.path() + "/missing"));

  s = server.Start(dir.path() + "/" + std::string(120, 'd'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);

  const std::string file = dir.path() + "/gpulet-gpu.sock";
  int fd = open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  close(fd);
  s = server.Start(dir.path());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr(file));
  EXPECT_EQ(access(file.c_str(), F_OK), 0) << "a regular file was deleted";
  EXPECT_FALSE(server.running());

  PluginServer nested({"nvidia.com/gpu", "a/b.sock"}, devices, EnvvarResponse,
                      SimplePreferred);
  EXPECT_EQ(nested.Start(dir.path()).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpulet::plugin
