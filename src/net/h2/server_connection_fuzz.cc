// libFuzzer target for h2::ServerConnection: the input is what a client
// sends on the socket, cut into reads at every 0xfe byte after the first 24
// (so frames split across reads get exercised), with the streams woken,
// deadlines expired and the output drained between reads, and Shutdown at
// the end. The service has one unary and one streaming method, both valid
// paths a fuzzer can find in the input's strings. No input may crash, leak
// or make the connection produce more than a bounded amount at once.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "src/net/h2/server_connection.h"

namespace {

using gpulet::h2::Clock;
using gpulet::h2::Service;
using gpulet::h2::StreamSource;
using gpulet::h2::StreamStep;

class TwoMessages final : public StreamSource {
 public:
  StreamStep Next() override {
    if (++steps_ > 2) return {nullptr, absl::OkStatus()};
    return {std::make_shared<const std::string>(70000, 'm'), std::nullopt};
  }
  void Ended(std::string_view) override {}

 private:
  int steps_ = 0;
};

const Service& FuzzService() {
  static const Service* const service = [] {
    auto* s = new Service;
    s->unary["/a/U"] =
        [](std::string_view request) -> absl::StatusOr<std::string> {
      if (!request.empty() && request[0] == 'e') {
        return absl::InvalidArgumentError("bad \xff request");
      }
      return std::string(request);
    };
    s->streaming["/a/S"] =
        [](std::string_view) -> absl::StatusOr<std::unique_ptr<StreamSource>> {
      return std::make_unique<TwoMessages>();
    };
    return s;
  }();
  return *service;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  gpulet::h2::ServerConnection connection(FuzzService());
  std::string out;
  Clock::time_point now = Clock::now();
  size_t start = 0;
  bool open = true;
  while (open && start < input.size()) {
    size_t end = input.find('\xfe', std::min(start + 24, input.size()));
    if (end == std::string_view::npos) end = input.size();
    open = connection.Receive(input.substr(start, end - start), now);
    start = end + 1;
    connection.WakeStreams();
    now += std::chrono::milliseconds(100);
    connection.Expire(now);
    out.clear();
    if (!connection.Produce(out, 256 * 1024)) break;
  }
  connection.Shutdown();
  out.clear();
  connection.Produce(out, 256 * 1024);
  return 0;
}
