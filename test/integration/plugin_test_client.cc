#include "test/integration/plugin_test_client.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

namespace gpulet::testing {

std::unique_ptr<v1beta1::DevicePlugin::Stub> DialPlugin(
    const std::string& socket_path) {
  return v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
      "unix:" + socket_path, grpc::InsecureChannelCredentials()));
}

std::unique_ptr<grpc::ClientContext> RpcContext() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + kRpcTimeout));
  return context;
}

ListAndWatchReader::ListAndWatchReader(v1beta1::DevicePlugin::Stub& stub) {
  context_.set_deadline(absl::ToChronoTime(absl::Now() + absl::Minutes(5)));
  thread_ = std::jthread([this, &stub] { Run(stub); });
}

ListAndWatchReader::~ListAndWatchReader() { Cancel(); }

void ListAndWatchReader::Run(v1beta1::DevicePlugin::Stub& stub) {
  v1beta1::Empty request;
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader =
      stub.ListAndWatch(&context_, request);
  v1beta1::ListAndWatchResponse message;
  while (reader->Read(&message)) {
    absl::MutexLock lock(&mu_);
    messages_.push_back(message);
  }
  grpc::Status status = reader->Finish();
  absl::MutexLock lock(&mu_);
  end_ = status;
}

std::vector<v1beta1::ListAndWatchResponse> ListAndWatchReader::WaitForMessages(
    size_t n) {
  absl::MutexLock lock(&mu_);
  auto ready = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return messages_.size() >= n || end_.has_value();
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), kRpcTimeout);
  return messages_;
}

std::optional<grpc::Status> ListAndWatchReader::WaitForEnd() {
  absl::MutexLock lock(&mu_);
  auto ended = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return end_.has_value();
  };
  mu_.AwaitWithTimeout(absl::Condition(&ended), kRpcTimeout);
  return end_;
}

void ListAndWatchReader::Cancel() { context_.TryCancel(); }

ShortTempDir::ShortTempDir() {
  char tmpl[] = "/tmp/gpl-XXXXXX";
  if (mkdtemp(tmpl) != nullptr) path_ = tmpl;
}

ShortTempDir::~ShortTempDir() {
  std::error_code ignored;
  if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
}

int OpenFdCount() {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)entry;
    ++count;
  }
  return count;
}

bool MakeStaleSocket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
            listen(fd, 1) == 0;
  close(fd);
  return ok;
}

}  // namespace gpulet::testing
