// libFuzzer target: the decoders of API server answers on arbitrary bytes
// must return a value or an error, never crash, hang or read out of
// bounds. The input is fed to the watch decoder in pieces cut at positions
// taken from its first byte, and whole to the list, object and Status
// decoders.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/net/kube/api_status.h"
#include "src/net/kube/list_page.h"
#include "src/net/kube/watch_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpulet::kube;  // NOLINT(build/namespaces)
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t piece = size > 0 ? 1 + data[0] % 64 : 1;

  WatchDecoder decoder(/*max_line_bytes=*/4096);
  std::vector<WatchEvent> events;
  absl::Status status;
  for (size_t at = 0; at < text.size() && status.ok(); at += piece) {
    status = decoder.Feed(text.substr(at, piece), &events);
  }
  if (status.ok()) (void)decoder.Finish(&events);
  for (const WatchEvent& event : events) {
    (void)ResourceVersionOf(event.object);
    if (event.type == EventType::kError) {
      absl::Status error = StatusFromApiStatus("watch", event.object);
      (void)IsGone(error);
      (void)RetryAfter(error);
    }
  }

  (void)DecodeListPage("list", text);
  (void)DecodeObject("get", text);
  absl::Status response = StatusFromResponse(
      "get", Response{.status = 400 + static_cast<int>(size % 200),
                      .body = std::string(text),
                      .retry_after = std::string(text.substr(0, 8))});
  (void)Reason(response);
  (void)RetryAfter(response);
  return 0;
}
