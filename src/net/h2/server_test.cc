// h2::Server against gRPC C++'s client (the library's own HTTP/2 and gRPC
// framing, not ours): unary calls, errors and their messages, unknown
// methods, compressed and oversized messages, deadlines, cancels, a large
// streamed response across flow-control windows, GOAWAY on Stop, garbage on
// the socket and many connections at once.
#include "src/net/h2/server.h"

#include <grpcpp/grpcpp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gtest/gtest.h"

namespace gpulet::h2 {
namespace {

constexpr char kAllocate[] = "/v1beta1.DevicePlugin/Allocate";
constexpr char kOptions[] = "/v1beta1.DevicePlugin/GetDevicePluginOptions";
constexpr char kList[] = "/v1beta1.DevicePlugin/ListAndWatch";

// A short-pathed directory, removed with what is left in it.
class ScratchDir {
 public:
  ScratchDir() {
    char name[] = "/tmp/h2-XXXXXX";
    path_ = ::mkdtemp(name);
  }
  ~ScratchDir() {
    ::unlink((path_ + "/h2.sock").c_str());
    ::rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// What the streams of one test saw, shared with the test body.
struct Events {
  absl::Mutex mu;
  std::vector<std::string> ended ABSL_GUARDED_BY(mu);
  std::atomic<int> messages_left{0};  // a stream sends this many, then waits

  struct EndedWith {
    const Events* events;
    std::string why;
    bool Check() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
      for (const auto& e : events->ended) {
        if (e == why) return true;
      }
      return false;
    }
  };
  bool WaitEnded(const std::string& why) {
    absl::MutexLock lock(&mu);
    const EndedWith check{this, why};
    return mu.AwaitWithTimeout(absl::Condition(&check, &EndedWith::Check),
                               absl::Seconds(30));
  }
  bool AnyEnded() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return !ended.empty();
  }
};

// Sends `events.messages_left` copies of `message`, then nothing until the
// stream ends.
class CountingSource final : public StreamSource {
 public:
  CountingSource(Events& events, std::shared_ptr<const std::string> message)
      : events_(events), message_(std::move(message)) {}
  StreamStep Next() override {
    if (events_.messages_left.fetch_sub(1) > 0) return {message_, std::nullopt};
    return {};
  }
  void Ended(std::string_view why) override {
    absl::MutexLock lock(&events_.mu);
    events_.ended.emplace_back(why);
  }

 private:
  Events& events_;
  std::shared_ptr<const std::string> message_;
};

class H2ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path() + "/h2.sock";
    ASSERT_TRUE(server_.Start(path_, MakeService()).ok());
    stub_ = Stub();
  }

  Service MakeService() {
    Service service;
    service.unary[kAllocate] =
        [](std::string_view bytes) -> absl::StatusOr<std::string> {
      v1beta1::AllocateRequest request;
      if (!request.ParseFromArray(bytes.data(),
                                  static_cast<int>(bytes.size()))) {
        return absl::InternalError("cannot parse");
      }
      if (request.container_requests_size() == 0) {
        return absl::InvalidArgumentError("no containers: «ü» 100%\n");
      }
      v1beta1::AllocateResponse response;
      for (const auto& c : request.container_requests()) {
        (*response.add_container_responses()->mutable_envs())["IDS"] =
            c.devices_ids_size() > 0 ? c.devices_ids(0) : "";
      }
      return response.SerializeAsString();
    };
    service.streaming[kList] =
        [this](
            std::string_view) -> absl::StatusOr<std::unique_ptr<StreamSource>> {
      return std::make_unique<CountingSource>(events_, list_message_);
    };
    return service;
  }

  std::unique_ptr<v1beta1::DevicePlugin::Stub> Stub() {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
    return v1beta1::DevicePlugin::NewStub(grpc::CreateCustomChannel(
        "unix:" + path_, grpc::InsecureChannelCredentials(), args));
  }

  grpc::Status Allocate(const std::vector<std::string>& first_ids,
                        v1beta1::AllocateResponse* response) {
    v1beta1::AllocateRequest request;
    for (const auto& id : first_ids) {
      request.add_container_requests()->add_devices_ids(id);
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
    return stub_->Allocate(&context, request, response);
  }

  ScratchDir dir_;
  std::string path_;
  Events events_;
  std::shared_ptr<const std::string> list_message_ =
      std::make_shared<const std::string>([] {
        v1beta1::ListAndWatchResponse r;
        r.add_devices()->set_id("GPU-0");
        return r.SerializeAsString();
      }());
  Server server_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
};

TEST_F(H2ServerTest, SocketIsOwnerOnly) {
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(H2ServerTest, UnaryCallAnswers) {
  v1beta1::AllocateResponse response;
  ASSERT_TRUE(Allocate({"GPU-1", "GPU-2"}, &response).ok());
  ASSERT_EQ(response.container_responses_size(), 2);
  EXPECT_EQ(response.container_responses(1).envs().at("IDS"), "GPU-2");
}

TEST_F(H2ServerTest, ErrorKeepsCodeAndPercentEncodedMessage) {
  v1beta1::AllocateResponse response;
  grpc::Status s = Allocate({}, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "no containers: «ü» 100%\n");
}

TEST_F(H2ServerTest, UnknownMethodIsUnimplementedNamingIt) {
  grpc::ClientContext context;
  v1beta1::DevicePluginOptions options;
  grpc::Status s =
      stub_->GetDevicePluginOptions(&context, v1beta1::Empty(), &options);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(s.error_message().find(kOptions), std::string::npos)
      << s.error_message();
}

TEST_F(H2ServerTest, CompressedMessageIsUnimplemented) {
  grpc::ClientContext context;
  context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids(std::string(4096, 'x'));
  v1beta1::AllocateResponse response;
  grpc::Status s = stub_->Allocate(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED)
      << s.error_message();
}

TEST_F(H2ServerTest, MessageOverFourMiBIsResourceExhausted) {
  v1beta1::AllocateResponse response;
  grpc::Status s = Allocate({std::string(5 * 1024 * 1024, 'x')}, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  ASSERT_TRUE(Allocate({"GPU-0"}, &response).ok());  // connection still fine
}

TEST_F(H2ServerTest, StreamDeadlineEndsItOnTheServer) {
  events_.messages_left = 1;
  // The connection is up before the deadline starts, and the deadline is
  // long enough that a loaded machine still gets the first message to the
  // client: the test is about the end of the stream, not the start.
  v1beta1::AllocateResponse warm;
  ASSERT_TRUE(Allocate({"GPU-0"}, &warm).ok());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(3));
  auto reader = stub_->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse message;
  ASSERT_TRUE(reader->Read(&message));
  EXPECT_FALSE(reader->Read(&message));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server's own timer ended the stream (grpc-timeout honoured), or the
  // client's RST_STREAM did first: either way the source is told.
  absl::MutexLock lock(&events_.mu);
  events_.mu.AwaitWithTimeout(absl::Condition(&events_, &Events::AnyEnded),
                              absl::Seconds(30));
  ASSERT_EQ(events_.ended.size(), 1u);
  EXPECT_TRUE(events_.ended[0] == "deadline passed" ||
              events_.ended[0] == "client cancelled")
      << events_.ended[0];
}

TEST_F(H2ServerTest, CancelReachesTheSource) {
  events_.messages_left = 1;
  grpc::ClientContext context;
  auto reader = stub_->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse message;
  ASSERT_TRUE(reader->Read(&message));
  context.TryCancel();
  EXPECT_FALSE(reader->Read(&message));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(events_.WaitEnded("client cancelled"));
}

TEST_F(H2ServerTest, LargeMessagesStreamAcrossFlowControlWindows) {
  v1beta1::ListAndWatchResponse big;
  for (int i = 0; i < 20000; ++i) {
    big.add_devices()->set_id("GPU-" + std::to_string(i) + "::replica");
  }
  list_message_ = std::make_shared<const std::string>(big.SerializeAsString());
  ASSERT_GT(list_message_->size(), 400'000u);
  events_.messages_left = 5;
  grpc::ClientContext context;
  auto reader = stub_->ListAndWatch(&context, v1beta1::Empty());
  for (int i = 0; i < 5; ++i) {
    v1beta1::ListAndWatchResponse message;
    ASSERT_TRUE(reader->Read(&message)) << i;
    ASSERT_EQ(message.devices_size(), 20000);
    EXPECT_EQ(message.devices(19999).id(), "GPU-19999::replica");
  }
  context.TryCancel();
}

TEST_F(H2ServerTest, StopEndsStreamsWithOkAndRefusesNewCalls) {
  events_.messages_left = 1;
  grpc::ClientContext context;
  auto reader = stub_->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse message;
  ASSERT_TRUE(reader->Read(&message));
  server_.Stop();
  EXPECT_FALSE(reader->Read(&message));
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_TRUE(events_.WaitEnded("server stopping"));
  v1beta1::AllocateResponse response;
  EXPECT_EQ(Allocate({"GPU-0"}, &response).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // Restartable.
  ::unlink(path_.c_str());
  ASSERT_TRUE(server_.Start(path_, MakeService()).ok());
  stub_ = Stub();
  EXPECT_TRUE(Allocate({"GPU-0"}, &response).ok());
}

int Connect(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST_F(H2ServerTest, GarbageClosesTheConnectionAndNothingElse) {
  for (const std::string& garbage :
       {std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
        std::string(300, '\xff'),
        std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") +
            std::string("\x00\x00\x04\x09\x00\x00\x00\x00\x01zzzz", 13)}) {
    const int fd = Connect(path_);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, garbage.data(), garbage.size()),
              static_cast<ssize_t>(garbage.size()));
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) {
    }
    EXPECT_EQ(n, 0);  // closed by the server, after its GOAWAY if any
    ::close(fd);
  }
  v1beta1::AllocateResponse response;
  EXPECT_TRUE(Allocate({"GPU-0"}, &response).ok());
}

TEST_F(H2ServerTest, ManyConnectionsAndCallsAtOnce) {
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      auto stub = Stub();
      for (int i = 0; i < 50; ++i) {
        v1beta1::AllocateRequest request;
        request.add_container_requests()->add_devices_ids(
            "GPU-" + std::to_string(t * 100 + i));
        v1beta1::AllocateResponse response;
        grpc::ClientContext context;
        if (stub->Allocate(&context, request, &response).ok() &&
            response.container_responses(0).envs().at("IDS") ==
                "GPU-" + std::to_string(t * 100 + i)) {
          ++ok;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 16 * 50);
}

}  // namespace
}  // namespace gpulet::h2
