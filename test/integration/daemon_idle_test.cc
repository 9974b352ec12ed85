// An idle `gpulet plugin` waits for events instead of polling: its
// ListAndWatch streams hold no thread, and its health monitor's NVML wait
// has a short timeout only while a GPU is unhealthy. These are the
// conditions a test can check without waiting for a duration; how often
// gpulet wakes per minute is measured by bench/idle-cpu, since "nothing
// happened for a while" can only be observed by letting time pass.
#include <signal.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sim/control_client.h"
#include "test/integration/daemon_fake_kubelet.h"
#include "test/integration/daemon_process.h"
#include "test/integration/gpulet_runner.h"

namespace gpulet::testing {
namespace {

// Only reached when something is broken.
constexpr absl::Duration kTimeout = absl::Seconds(20);
constexpr char kSocket[] = "gpulet-gpu.sock";
// Shorter than any wait an idle monitor makes, longer than a probing one's.
constexpr unsigned kIdleWaitAtLeastMs = 60 * 1000;
constexpr unsigned kProbeWaitMs = 1000;

// The timeouts of the simulator's nvmlEventSetWait calls blocked right now,
// or nullopt when the simulator could not be asked.
std::optional<std::vector<unsigned>> BlockedWaits(const std::string& socket) {
  absl::StatusOr<std::string> reply = sim::SendControlCommand(socket, "status");
  if (!reply.ok()) return std::nullopt;
  nlohmann::json status = nlohmann::json::parse(*reply, nullptr, false);
  if (status.is_discarded() || !status.contains("waits")) return std::nullopt;
  return status["waits"]["blocked_timeouts_ms"].get<std::vector<unsigned>>();
}

// Asks the simulator until exactly one wait is blocked with a timeout for
// which `want` holds; returns the last answer for failure messages.
template <typename Want>
std::string WaitForBlockedWait(const std::string& socket, Want want,
                               bool* found) {
  const absl::Time deadline = absl::Now() + kTimeout;
  std::string last = "(no answer)";
  *found = false;
  while (absl::Now() < deadline) {
    std::optional<std::vector<unsigned>> waits = BlockedWaits(socket);
    if (waits.has_value()) {
      last = "[" + absl::StrJoin(*waits, ", ") + "]";
      if (waits->size() == 1 && want((*waits)[0])) {
        *found = true;
        return last;
      }
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return last;
}

// ListAndWatch streams held open, each counting the lists it received.
class Streams {
 public:
  explicit Streams(std::string socket) : socket_(std::move(socket)) {}
  ~Streams() { CancelAll(); }

  void Open() {
    auto stream = std::make_unique<Stream>();
    stream->stub = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
        "unix://" + socket_, grpc::InsecureChannelCredentials()));
    Stream* raw = stream.get();
    streams_.push_back(std::move(stream));
    raw->reader = std::thread([this, raw] {
      auto reader = raw->stub->ListAndWatch(&raw->context, v1beta1::Empty());
      v1beta1::ListAndWatchResponse response;
      while (reader->Read(&response)) {
        absl::MutexLock lock(&mu_);
        ++raw->lists;
      }
      reader->Finish().ok();
      absl::MutexLock lock(&mu_);
      raw->ended = true;
    });
  }
  // Waits until every stream got at least one list.
  bool WaitForFirstLists() {
    absl::MutexLock lock(&mu_);
    auto all_listed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      for (const auto& s : streams_) {
        if (s->lists == 0) return false;
      }
      return true;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&all_listed), kTimeout);
  }
  // Waits until the server ended every stream (the client did not cancel).
  bool WaitForAllEnded() {
    absl::MutexLock lock(&mu_);
    auto all_ended = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      for (const auto& s : streams_) {
        if (!s->ended) return false;
      }
      return true;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&all_ended), kTimeout);
  }
  void CancelAll() {
    for (auto& s : streams_) s->context.TryCancel();
    for (auto& s : streams_) {
      if (s->reader.joinable()) s->reader.join();
    }
  }

 private:
  struct Stream {
    std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
    grpc::ClientContext context;
    std::thread reader;
    int lists = 0;       // GUARDED_BY(mu_)
    bool ended = false;  // GUARDED_BY(mu_)
  };

  const std::string socket_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Stream>> streams_;
};

class DaemonIdleTest : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directory(dir_); }

  std::unique_ptr<DaemonProcess> Start(const std::string& machine) {
    return std::make_unique<DaemonProcess>(
        machine,
        std::vector<std::string>{"--kubelet-socket", kubelet_.socket_path()},
        log_, std::vector<std::string>{"GPULET_SIM_SOCKET=" + sim_socket_});
  }

  TempDir tmp_;
  std::string dir_ = tmp_.path() + "/plugins";
  std::string log_ = tmp_.path() + "/gpulet.log";
  std::string sim_socket_ = tmp_.path() + "/sim.sock";
  FakeKubelet kubelet_{dir_};
};

TEST_F(DaemonIdleTest, HealthMonitorWaitsLongUnlessAGpuIsUnhealthy) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("dgx-h100");
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  ASSERT_TRUE(plugin->WaitForLog("health monitor: watching", kTimeout))
      << plugin->Log();

  bool found = false;
  std::string waits = WaitForBlockedWait(
      sim_socket_, [](unsigned ms) { return ms >= kIdleWaitAtLeastMs; },
      &found);
  EXPECT_TRUE(found) << "an idle monitor should wait at least "
                     << kIdleWaitAtLeastMs << " ms; blocked waits: " << waits;

  // An unhealthy GPU is probed at every timeout: now the wait is short.
  ASSERT_TRUE(sim::SendControlCommand(sim_socket_, "xid 1 79").ok());
  ASSERT_TRUE(plugin->WaitForLog("marking GPU 1 unhealthy", kTimeout))
      << plugin->Log();
  waits = WaitForBlockedWait(
      sim_socket_, [](unsigned ms) { return ms == kProbeWaitMs; }, &found);
  EXPECT_TRUE(found) << "blocked waits: " << waits;

  // The long wait does not delay the exit: the stop interrupts it.
  plugin->Signal(SIGTERM);
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

TEST_F(DaemonIdleTest, IdleMonitorStopsAtOnceOnSigterm) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("dgx-h100");
  ASSERT_TRUE(plugin->WaitForLog("health monitor: watching", kTimeout))
      << plugin->Log();
  bool found = false;
  const std::string waits = WaitForBlockedWait(
      sim_socket_, [](unsigned ms) { return ms >= kIdleWaitAtLeastMs; },
      &found);
  ASSERT_TRUE(found) << "blocked waits: " << waits;
  plugin->Signal(SIGTERM);
  // kTimeout is far shorter than the monitor's idle wait: an exit within it
  // means the wait was interrupted.
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
  EXPECT_NE(plugin->Log().find("stopped serving; sockets removed"),
            std::string::npos)
      << plugin->Log();
}

TEST_F(DaemonIdleTest, ListAndWatchStreamsHoldNoThread) {
  ASSERT_TRUE(kubelet_.Start());
  auto plugin = Start("dgx-h100");
  ASSERT_TRUE(kubelet_.WaitForRegistrations(1, kTimeout)) << plugin->Log();
  Streams streams(dir_ + "/" + kSocket);
  streams.Open();
  ASSERT_TRUE(streams.WaitForFirstLists()) << plugin->Log();
  const int threads = plugin->Threads();

  constexpr int kMore = 8;
  for (int i = 0; i < kMore; ++i) streams.Open();
  ASSERT_TRUE(streams.WaitForFirstLists()) << plugin->Log();
  // A stream served by a blocked thread would add one each; gRPC may start
  // a thread of its own under the burst of new calls.
  EXPECT_LE(plugin->Threads() - threads, 2)
      << "threads before the " << kMore << " streams: " << threads;

  // The streams still end at once: on SIGTERM the server ends them before
  // it shuts down, and the process exits.
  plugin->Signal(SIGTERM);
  EXPECT_TRUE(streams.WaitForAllEnded()) << plugin->Log();
  EXPECT_EQ(plugin->WaitExit(kTimeout), 0) << plugin->Log();
}

}  // namespace
}  // namespace gpulet::testing
