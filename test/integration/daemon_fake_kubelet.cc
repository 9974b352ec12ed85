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
  // A stopping kubelet's connections to the plugins go with it.
  EndWatches();
  ::unlink(socket_path().c_str());
}

grpc::Status FakeKubelet::Register(const v1beta1::RegisterRequest& request) {
  grpc::Status status = CheckPlugin(request);
  if (!status.ok()) {
    absl::MutexLock lock(&mu_);
    rejections_.push_back(status.error_message());
    return status;
  }
  StartWatch(request);
  return status;
}

// Stop waits for Register to return (the server's Wait), so the watch is
// started before Stop's EndWatches can see it.
void FakeKubelet::StartWatch(const v1beta1::RegisterRequest& request) {
  auto watch = std::make_unique<Watch>();
  Watch& w = *watch;
  {
    absl::MutexLock lock(&mu_);
    registrations_.push_back(request);
    watches_.push_back(std::move(watch));
  }
  w.thread = std::thread(
      [this, &w, endpoint = request.endpoint()] { ReadWatch(w, endpoint); });
}

void FakeKubelet::ReadWatch(Watch& watch, const std::string& endpoint) {
  auto stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel(absl::StrCat("unix://", dir_, "/", endpoint),
                          grpc::InsecureChannelCredentials()));
  auto reader = stub->ListAndWatch(&watch.context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  while (reader->Read(&response)) {
    absl::MutexLock lock(&mu_);
    ++watch.lists;
  }
  reader->Finish().ok();
  absl::MutexLock lock(&mu_);
  watch.ended = true;
}

void FakeKubelet::EndWatches() {
  std::vector<std::unique_ptr<Watch>> watches;
  {
    absl::MutexLock lock(&mu_);
    for (auto& watch : watches_) {
      if (watch != nullptr) watch->context.TryCancel();
    }
    watches.swap(watches_);
  }
  for (auto& watch : watches) {
    if (watch != nullptr && watch->thread.joinable()) watch->thread.join();
  }
  // The registrations stay counted; their streams are gone.
  absl::MutexLock lock(&mu_);
  watches_.resize(watches.size());
}

bool FakeKubelet::WaitWatching(int n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto watching = [&] {
    mu_.AssertHeld();
    return static_cast<int>(watches_.size()) >= n && watches_[n - 1] &&
           watches_[n - 1]->lists > 0;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&watching), timeout);
}

int FakeKubelet::lists_received(int n) const {
  absl::MutexLock lock(&mu_);
  if (n < 1 || n > static_cast<int>(watches_.size()) || !watches_[n - 1]) {
    return -1;
  }
  return watches_[n - 1]->lists;
}

bool FakeKubelet::DropLatestWatch() {
  absl::MutexLock lock(&mu_);
  if (watches_.empty() || !watches_.back() || watches_.back()->ended) {
    return false;
  }
  watches_.back()->context.TryCancel();
  return true;
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
