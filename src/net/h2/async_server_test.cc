// Asynchronous unary calls on h2::Server against gRPC C++'s client: a call
// whose handler has not answered yet holds up neither another call nor a
// stream on the same connection; deadlines (grpc-timeout, or the server's
// default) are answered by the server; completions after the deadline, a
// cancel or Stop are dropped; a dropped responder answers INTERNAL. And
// CallWorkers: a job's token is requested at its deadline and on Stop.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gtest/gtest.h"
#include "src/net/h2/call_workers.h"
#include "src/net/h2/server.h"

namespace gpulet::h2 {
namespace {

constexpr char kAllocate[] = "/v1beta1.DevicePlugin/Allocate";
constexpr char kSlow[] = "/v1beta1.DevicePlugin/GetPreferredAllocation";
constexpr char kList[] = "/v1beta1.DevicePlugin/ListAndWatch";
constexpr absl::Duration kWait = absl::Seconds(30);

// Parks the responders of slow calls until the test completes them.
struct Parked {
  absl::Mutex mu;
  std::vector<UnaryResponder> responders ABSL_GUARDED_BY(mu);

  void Add(UnaryResponder r) {
    absl::MutexLock lock(&mu);
    responders.push_back(std::move(r));
  }
  std::optional<UnaryResponder> Wait(size_t n) {
    absl::MutexLock lock(&mu);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return responders.size() >= n;
    };
    if (!mu.AwaitWithTimeout(absl::Condition(&enough), kWait)) {
      return std::nullopt;
    }
    return responders[n - 1];
  }
  void Clear() {
    absl::MutexLock lock(&mu);
    responders.clear();
  }
};

// Sends one message each time the test wakes the streams.
class OnWake final : public StreamSource {
 public:
  explicit OnWake(std::atomic<int>& left) : left_(left) {}
  StreamStep Next() override {
    if (left_.fetch_sub(1) <= 0) return {};
    v1beta1::ListAndWatchResponse r;
    r.add_devices()->set_id("GPU-0");
    return {std::make_shared<const std::string>(r.SerializeAsString()),
            std::nullopt};
  }
  void Ended(std::string_view) override {}

 private:
  std::atomic<int>& left_;
};

class AsyncServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/h2a-XXXXXX";
    dir_ = ::mkdtemp(name);
    path_ = dir_ + "/h2.sock";
    Service service;
    service.unary[kAllocate] = [](std::string_view) {
      return absl::StatusOr<std::string>(
          v1beta1::AllocateResponse().SerializeAsString());
    };
    service.async_unary[kSlow] = [this](std::string_view,
                                        UnaryResponder responder) {
      parked_.Add(std::move(responder));
    };
    service.streaming[kList] =
        [this](
            std::string_view) -> absl::StatusOr<std::unique_ptr<StreamSource>> {
      return std::make_unique<OnWake>(left_);
    };
    service.async_default_deadline = std::chrono::milliseconds(300);
    ASSERT_TRUE(server_.Start(path_, std::move(service)).ok());
    stub_ = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
        "unix:" + path_, grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    server_.Stop();
    parked_.Clear();
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }

  // A slow call on its own thread; `deadline` none: no grpc-timeout.
  std::jthread SlowCall(grpc::Status& status,
                        std::optional<absl::Duration> deadline = kWait,
                        grpc::ClientContext* context = nullptr) {
    return std::jthread([this, &status, deadline, context] {
      grpc::ClientContext own;
      grpc::ClientContext& c = context != nullptr ? *context : own;
      if (deadline.has_value()) {
        c.set_deadline(absl::ToChronoTime(absl::Now() + *deadline));
      }
      v1beta1::PreferredAllocationResponse response;
      status = stub_->GetPreferredAllocation(
          &c, v1beta1::PreferredAllocationRequest(), &response);
    });
  }

  std::string dir_, path_;
  Parked parked_;
  std::atomic<int> left_{1};
  Server server_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
};

TEST_F(AsyncServerTest, SlowCallHoldsUpNeitherCallsNorStreams) {
  grpc::Status slow;
  std::jthread caller = SlowCall(slow);
  std::optional<UnaryResponder> responder = parked_.Wait(1);
  ASSERT_TRUE(responder.has_value());

  // Same channel, same connection: a unary call and a stream's messages.
  grpc::ClientContext unary;
  unary.set_deadline(absl::ToChronoTime(absl::Now() + kWait));
  v1beta1::AllocateResponse allocated;
  EXPECT_TRUE(
      stub_->Allocate(&unary, v1beta1::AllocateRequest(), &allocated).ok());
  grpc::ClientContext streaming;
  auto reader = stub_->ListAndWatch(&streaming, v1beta1::Empty());
  v1beta1::ListAndWatchResponse message;
  ASSERT_TRUE(reader->Read(&message));
  left_ = 1;
  server_.WakeStreams();
  ASSERT_TRUE(reader->Read(&message));
  EXPECT_EQ(message.devices(0).id(), "GPU-0");

  v1beta1::PreferredAllocationResponse answer;
  answer.add_container_responses()->add_deviceids("GPU-1");
  responder->Complete(answer.SerializeAsString());
  caller.join();
  EXPECT_TRUE(slow.ok()) << slow.error_message();
  streaming.TryCancel();
}

TEST_F(AsyncServerTest, GrpcTimeoutIsTheCallsDeadline) {
  grpc::Status slow;
  std::jthread caller = SlowCall(slow, kWait);
  std::optional<UnaryResponder> responder = parked_.Wait(1);
  ASSERT_TRUE(responder.has_value());
  // Not the server's default of 300 ms: the client's 30 s.
  EXPECT_GT(responder->deadline(), Clock::now() + std::chrono::seconds(10));
  responder->Complete(absl::UnavailableError("node n1: not now"));
  caller.join();
  EXPECT_EQ(slow.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(slow.error_message(), "node n1: not now");
}

TEST_F(AsyncServerTest, ServerAnswersDeadlineExceededAndDropsTheLateAnswer) {
  grpc::Status slow;
  std::jthread caller = SlowCall(slow, std::nullopt);  // server's default
  std::optional<UnaryResponder> responder = parked_.Wait(1);
  ASSERT_TRUE(responder.has_value());
  caller.join();
  EXPECT_EQ(slow.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(slow.error_message(), "deadline exceeded");  // the server's
  responder->Complete(std::string());                    // dropped
  responder->Complete(std::string());                    // twice: dropped too
  grpc::ClientContext unary;
  v1beta1::AllocateResponse allocated;
  EXPECT_TRUE(
      stub_->Allocate(&unary, v1beta1::AllocateRequest(), &allocated).ok());
}

TEST_F(AsyncServerTest, CompletionAfterCancelOrStopIsHarmless) {
  grpc::Status cancelled;
  grpc::ClientContext context;
  std::jthread caller = SlowCall(cancelled, kWait, &context);
  std::optional<UnaryResponder> first = parked_.Wait(1);
  ASSERT_TRUE(first.has_value());
  context.TryCancel();
  caller.join();
  EXPECT_EQ(cancelled.error_code(), grpc::StatusCode::CANCELLED);
  first->Complete(std::string());

  grpc::Status stopped;
  caller = SlowCall(stopped);
  std::optional<UnaryResponder> second = parked_.Wait(2);
  ASSERT_TRUE(second.has_value());
  server_.Stop();
  caller.join();
  EXPECT_EQ(stopped.error_code(), grpc::StatusCode::UNAVAILABLE);
  // From another thread, after the loop and its eventfd are gone.
  std::thread([&] { second->Complete(std::string()); }).join();
}

TEST_F(AsyncServerTest, ADroppedResponderAnswersInternal) {
  grpc::Status slow;
  std::jthread caller = SlowCall(slow);
  ASSERT_TRUE(parked_.Wait(1).has_value());
  parked_.Clear();  // the last copy goes without an answer
  caller.join();
  EXPECT_EQ(slow.error_code(), grpc::StatusCode::INTERNAL);
}

void WaitForStop(std::stop_token stop) {
  absl::Notification stopped;
  std::stop_callback on_stop(stop, [&] { stopped.Notify(); });
  stopped.WaitForNotification();
}

TEST(CallWorkersTest, TokenIsRequestedAtTheDeadlineAndOnStop) {
  CallWorkers workers("test", 1, 4);
  absl::Notification timed_out;
  ASSERT_TRUE(workers.Submit(Clock::now() + std::chrono::milliseconds(50),
                             [&](std::stop_token stop) {
                               WaitForStop(stop);
                               timed_out.Notify();
                             }));
  EXPECT_TRUE(timed_out.WaitForNotificationWithTimeout(kWait));

  absl::Notification started, ended;
  ASSERT_TRUE(workers.Submit(Clock::time_point::max(), [&](std::stop_token s) {
    started.Notify();
    WaitForStop(s);
    ended.Notify();
  }));
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(kWait));
  bool queued_ran_stopped = false;
  ASSERT_TRUE(workers.Submit(Clock::time_point::max(), [&](std::stop_token s) {
    queued_ran_stopped = s.stop_requested();
  }));
  workers.Stop();
  EXPECT_TRUE(ended.HasBeenNotified());
  EXPECT_TRUE(queued_ran_stopped);
  EXPECT_FALSE(
      workers.Submit(Clock::time_point::max(), [](std::stop_token) {}));
}

}  // namespace
}  // namespace gpulet::h2
