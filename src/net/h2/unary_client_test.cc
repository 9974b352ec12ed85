// CallUnary against a gRPC C++ server (not ours) and against h2::Server.
#include "src/net/h2/unary_client.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/synchronization/notification.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gtest/gtest.h"
#include "src/net/h2/server.h"

namespace gpulet::h2 {
namespace {

constexpr char kRegister[] = "/v1beta1.Registration/Register";

class FakeKubelet final : public v1beta1::Registration::Service {
 public:
  grpc::Status Register(grpc::ServerContext* context,
                        const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    last_resource_ = request->resource_name();
    if (request->resource_name() == "hang") {
      while (!context->IsCancelled())
        release_.WaitForNotificationWithTimeout(absl::Milliseconds(5));
      return grpc::Status::CANCELLED;
    }
    if (request->resource_name() == "bad") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "bad resource «x» 50%");
    }
    return grpc::Status::OK;
  }
  std::string last_resource_;
  absl::Notification release_;
};

class UnaryClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/h2c-XXXXXX";
    dir_ = ::mkdtemp(name);
    path_ = dir_ + "/kubelet.sock";
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + path_,
                             grpc::InsecureServerCredentials());
    builder.RegisterService(&kubelet_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    kubelet_.release_.Notify();
    server_->Shutdown();
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  absl::StatusOr<std::string> Register(const std::string& resource,
                                       absl::Duration timeout,
                                       const CancelCheck& cancel = nullptr) {
    v1beta1::RegisterRequest request;
    request.set_version("v1beta1");
    request.set_resource_name(resource);
    return CallUnary(path_, kRegister, request.SerializeAsString(), timeout,
                     cancel);
  }

  std::string dir_, path_;
  FakeKubelet kubelet_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(UnaryClientTest, CallsAGrpcServer) {
  absl::StatusOr<std::string> reply =
      Register("nvidia.com/gpu", absl::Seconds(30));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(*reply, "");  // an Empty
  EXPECT_EQ(kubelet_.last_resource_, "nvidia.com/gpu");
}

TEST_F(UnaryClientTest, ServerErrorKeepsCodeAndMessage) {
  absl::StatusOr<std::string> reply = Register("bad", absl::Seconds(30));
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reply.status().message(), "bad resource «x» 50%");
}

TEST_F(UnaryClientTest, DeadlineAndCancel) {
  EXPECT_EQ(Register("hang", absl::Milliseconds(100)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  std::atomic<int> asked{0};
  EXPECT_EQ(Register("hang", absl::Seconds(30), [&] { return ++asked > 2; })
                .status()
                .code(),
            absl::StatusCode::kCancelled);
}

TEST_F(UnaryClientTest, NoServerIsUnavailableNamingThePath) {
  absl::StatusOr<std::string> reply =
      CallUnary(dir_ + "/missing.sock", kRegister, "", absl::Seconds(5));
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(reply.status().message().find("missing.sock"), std::string::npos);
}

TEST_F(UnaryClientTest, UnknownMethodOnOurServerIsUnimplemented) {
  Server ours;
  const std::string path = dir_ + "/ours.sock";
  Service service;
  service.unary["/t.T/Echo"] =
      [](std::string_view r) -> absl::StatusOr<std::string> {
    return std::string(r);
  };
  ASSERT_TRUE(ours.Start(path, std::move(service)).ok());
  absl::StatusOr<std::string> echo =
      CallUnary(path, "/t.T/Echo", "hello", absl::Seconds(30));
  ASSERT_TRUE(echo.ok()) << echo.status();
  EXPECT_EQ(*echo, "hello");
  EXPECT_EQ(CallUnary(path, "/t.T/Nope", "", absl::Seconds(30)).status().code(),
            absl::StatusCode::kUnimplemented);
  ours.Stop();
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace gpulet::h2
