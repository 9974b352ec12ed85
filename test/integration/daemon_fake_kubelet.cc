#include "test/integration/daemon_fake_kubelet.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gpulet::testing {

FakeKubelet::~FakeKubelet() { Stop(); }

bool FakeKubelet::Start() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (entry.is_socket()) std::filesystem::remove(entry.path(), ec);
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + socket_path(),
                           grpc::InsecureServerCredentials());
  service_ = std::make_unique<Service>(*this);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  return server_ != nullptr;
}

void FakeKubelet::Stop() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  server_.reset();
  service_.reset();
  ::unlink(socket_path().c_str());
}

grpc::Status FakeKubelet::Register(const v1beta1::RegisterRequest& request) {
  grpc::Status status = CheckPlugin(request);
  absl::MutexLock lock(&mu_);
  if (status.ok()) {
    registrations_.push_back(request);
  } else {
    rejections_.push_back(status.error_message());
  }
  return status;
}

grpc::Status FakeKubelet::CheckPlugin(
    const v1beta1::RegisterRequest& request) const {
  if (request.version() != "v1beta1") {
    return grpc::Status(grpc::StatusCode::UNKNOWN,
                        "unsupported version " + request.version());
  }
  if (request.resource_name().find('/') == std::string::npos) {
    return grpc::Status(grpc::StatusCode::UNKNOWN,
                        "invalid resource name " + request.resource_name());
  }
  auto channel = grpc::CreateChannel(
      absl::StrCat("unix://", dir_, "/", request.endpoint()),
      grpc::InsecureChannelCredentials());
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  v1beta1::Empty empty;
  v1beta1::DevicePluginOptions options;
  grpc::Status status = stub->GetDevicePluginOptions(&context, empty, &options);
  if (!status.ok()) {
    return grpc::Status(grpc::StatusCode::UNKNOWN,
                        "GetDevicePluginOptions on " + request.endpoint() +
                            ": " + status.error_message());
  }
  return grpc::Status::OK;
}

std::vector<v1beta1::RegisterRequest> FakeKubelet::registrations() const {
  absl::MutexLock lock(&mu_);
  return registrations_;
}

int FakeKubelet::registration_count() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(registrations_.size());
}

bool FakeKubelet::WaitForRegistrations(int n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto done = [&] {
    mu_.AssertHeld();
    return static_cast<int>(registrations_.size()) >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
}

std::vector<std::string> FakeKubelet::rejections() const {
  absl::MutexLock lock(&mu_);
  return rejections_;
}

}  // namespace gpulet::testing
