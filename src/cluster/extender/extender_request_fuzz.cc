// libFuzzer target: what a client of `gpulet extender` sends, from the
// bytes on the wire to the answer, must be answered or refused, never
// crash, hang or read out of bounds. An input holding "\r\n\r\n" is an
// HTTP/1.1 request: its head goes through the server's parser and, when
// accepted, the request with the rest as its body through the extender's
// routing; any other input is the JSON body of filter, prioritize or bind
// (chosen by its first byte). The extender runs against an in-memory API
// server with one node and one pending pod, made afresh for each input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "src/base/common/clock.h"
#include "src/base/metrics/registry.h"
#include "src/cluster/extender/binder.h"
#include "src/cluster/extender/extender.h"
#include "src/cluster/extender/node_cache.h"
#include "src/cluster/testing/fake_api_server.h"
#include "src/cluster/testing/test_nodes.h"
#include "src/net/http/request.h"
#include "src/net/kube/client.h"

namespace {

using namespace gpulet;  // NOLINT(build/namespaces)

http::Response Serve(const http::Request& request) {
  extender::testing::FakeApiServer api;
  const sharing::NodeMemory memory =
      extender::testing::Memory("big", {{16, 2}, {16, 0}});
  api.AddNode(extender::testing::NodeObject("big", &memory));
  api.AddPod(extender::testing::PodObject("p", {4}));
  common::FakeClock clock;
  kube::Client client(api, clock, {.qps = 0, .max_attempts = 1});
  extender::NodeCache cache;
  cache.Replace({api.Node("big")});
  extender::Binder binder(client, cache, {.max_conflicts = 2});
  metrics::Registry registry;
  extender::Extender ext(cache, binder, registry, {});
  return ext.Handle(request);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t end = text.find("\r\n\r\n");
  if (end != absl::string_view::npos) {
    absl::StatusOr<http::Head> head =
        http::ParseHead(text.substr(0, end), /*max_body_bytes=*/1 << 20);
    if (!head.ok()) {
      (void)http::FormatResponse(
          http::TextResponse(http::StatusCodeFor(head.status()),
                             head.status().message()),
          false);
      return 0;
    }
    head->request.body = std::string(text.substr(end + 4));
    (void)http::FormatResponse(Serve(head->request), head->keep_alive);
    return 0;
  }
  static const char* const kVerbs[] = {
      "/gpu-memory/filter", "/gpu-memory/prioritize", "/gpu-memory/bind"};
  http::Request request;
  request.method = "POST";
  request.path = size > 0 ? kVerbs[data[0] % 3] : kVerbs[0];
  request.target = request.path;
  request.version = "HTTP/1.1";
  request.body = std::string(size > 0 ? text.substr(1) : text);
  (void)http::FormatResponse(Serve(request), true);
  return 0;
}
