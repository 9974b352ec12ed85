// libFuzzer target: HttpResponseParser on arbitrary bytes must return a
// value or an error, never crash, hang or read out of bounds, and must
// never hand out more body bytes than it was fed. The input is fed in
// pieces cut at positions taken from its first byte, then the connection
// "closes"; a small head bound is used so the bound's paths are reached.
#include <cstddef>
#include <cstdint>

#include "src/net/kube/http_response_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gpulet::kube::HttpResponseParser;
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 32;
  const bool head = (data[0] & 0x80) != 0;
  absl::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  HttpResponseParser parser(/*max_head_bytes=*/512, head);
  size_t body = 0;
  const HttpResponseParser::BodyFn sink = [&body](absl::string_view chunk) {
    body += chunk.size();
    return body < 4096;
  };
  while (!text.empty()) {
    const absl::string_view part = text.substr(0, piece);
    text.remove_prefix(part.size());
    if (!parser.Feed(part, sink).ok()) return 0;
  }
  (void)parser.Finish();
  if (body > size) __builtin_trap();
  return 0;
}
