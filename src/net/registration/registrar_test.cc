#include "src/net/registration/registrar.h"

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace gpulet::registration {
namespace {

using ::testing::HasSubstr;

// The kubelet's side of registration, recording requests and answering
// with a configurable status.
class FakeRegistration final : public v1beta1::Registration::Service {
 public:
  grpc::Status Register(grpc::ServerContext*,
                        const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    absl::MutexLock lock(&mu_);
    requests_.push_back(*request);
    return reply_;
  }
  void SetReply(grpc::Status reply) {
    absl::MutexLock lock(&mu_);
    reply_ = std::move(reply);
  }
  std::vector<v1beta1::RegisterRequest> requests() {
    absl::MutexLock lock(&mu_);
    return requests_;
  }

 private:
  absl::Mutex mu_;
  grpc::Status reply_ ABSL_GUARDED_BY(mu_);
  std::vector<v1beta1::RegisterRequest> requests_ ABSL_GUARDED_BY(mu_);
};

class RegistrarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpulet-reg-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/kubelet.sock";
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    std::filesystem::remove_all(dir_);
  }
  void Serve() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + socket_,
                             grpc::InsecureServerCredentials());
    service_ = std::make_unique<FakeRegistration>();
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  RegisterParams Params() const {
    RegisterParams params;
    params.kubelet_socket = socket_;
    params.endpoint = "gpulet-gpu.sock";
    params.resource_name = "nvidia.com/gpu";
    return params;
  }

  std::string dir_;
  std::string socket_;
  std::unique_ptr<FakeRegistration> service_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(RegistrarTest, SendsVersionEndpointResourceAndOptions) {
  Serve();
  RegisterParams params = Params();
  params.pre_start_required = true;
  params.get_preferred_allocation_available = false;
  ASSERT_TRUE(Register(params, absl::Seconds(10)).ok());
  auto requests = service_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].version(), "v1beta1");
  EXPECT_EQ(requests[0].endpoint(), "gpulet-gpu.sock");
  EXPECT_EQ(requests[0].resource_name(), "nvidia.com/gpu");
  EXPECT_TRUE(requests[0].options().pre_start_required());
  EXPECT_FALSE(requests[0].options().get_preferred_allocation_available());
}

TEST_F(RegistrarTest, RejectionCarriesCodeResourceAndSocket) {
  Serve();
  service_->SetReply(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                  "invalid resource name"));
  absl::Status status = Register(Params(), absl::Seconds(10));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "register nvidia.com/gpu with " + socket_ +
                                  ": INVALID_ARGUMENT: invalid resource name");
}

TEST_F(RegistrarTest, NoKubeletIsUnavailable) {
  absl::Status status = Register(Params(), absl::Seconds(10));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(
      std::string(status.message()),
      HasSubstr("register nvidia.com/gpu with " + socket_ + ": UNAVAILABLE"));
}

TEST_F(RegistrarTest, RegistersAgainAfterKubeletRestart) {
  Serve();
  ASSERT_TRUE(Register(Params(), absl::Seconds(10)).ok());
  server_->Shutdown();
  server_.reset();
  std::filesystem::remove(socket_);
  Serve();
  ASSERT_TRUE(Register(Params(), absl::Seconds(10)).ok());
  EXPECT_EQ(service_->requests().size(), 1u);
}

}  // namespace
}  // namespace gpulet::registration
