// h2_test_server: an h2::Server with test methods, for the grpc-go client
// test (test/kubelet/h2wire), so the transport is also judged by the
// kubelet's own gRPC implementation.
//
//   h2_test_server <socket-path>
// Prints "ready" once serving; on SIGTERM stops (GOAWAY, streams end OK).
//
// Methods (messages are raw bytes):
//   /test.T/Echo    the request back; "err:<text>" is INVALID_ARGUMENT <text>
//   /test.T/Stream  request "<count>,<size>": count messages of size bytes,
//                   then OK; count -1: one message, then open until the
//                   client or the server ends it
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "src/net/h2/server.h"

namespace {

using gpulet::h2::Service;
using gpulet::h2::StreamSource;
using gpulet::h2::StreamStep;

class Repeat final : public StreamSource {
 public:
  Repeat(int count, size_t size)
      : left_(count),
        message_(std::make_shared<const std::string>(size, 'x')) {}
  StreamStep Next() override {
    if (left_ == 0) return {nullptr, absl::OkStatus()};
    if (left_ < 0) {
      if (sent_) return {};
      sent_ = true;
      return {message_, std::nullopt};
    }
    --left_;
    return {message_, std::nullopt};
  }
  void Ended(std::string_view why) override {
    std::fprintf(stderr, "stream ended: %.*s\n", static_cast<int>(why.size()),
                 why.data());
  }

 private:
  int left_;
  bool sent_ = false;
  std::shared_ptr<const std::string> message_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: h2_test_server <socket-path>\n", stderr);
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  Service service;
  service.unary["/test.T/Echo"] =
      [](std::string_view request) -> absl::StatusOr<std::string> {
    if (request.substr(0, 4) == "err:") {
      return absl::InvalidArgumentError(std::string(request.substr(4)));
    }
    return std::string(request);
  };
  service.streaming["/test.T/Stream"] = [](std::string_view request)
      -> absl::StatusOr<std::unique_ptr<StreamSource>> {
    const std::string text(request);
    const size_t comma = text.find(',');
    if (comma == std::string::npos) {
      return absl::InvalidArgumentError("want <count>,<size>");
    }
    return std::make_unique<Repeat>(
        std::atoi(text.substr(0, comma).c_str()),
        static_cast<size_t>(std::atol(text.substr(comma + 1).c_str())));
  };
  ::unlink(argv[1]);
  gpulet::h2::Server server;
  if (absl::Status s = server.Start(argv[1], std::move(service)); !s.ok()) {
    std::fprintf(stderr, "h2_test_server: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop, &signal);
  server.Stop();
  ::unlink(argv[1]);
  return 0;
}
