// WatchDecoder: the body of a watch (GET ...?watch=true) decoded as it
// arrives. The API server sends one JSON object per line,
//   {"type":"ADDED","object":{...}}\n
//   {"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12"}}}\n
//   {"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired",...}}\n
// and the transport hands them over in pieces cut anywhere (mid-line,
// mid-UTF-8 sequence, several lines at once). The decoder keeps the
// unfinished line and returns every complete event.
//
// A line that is not an event (not JSON, unknown type, object missing) is an
// InvalidArgument error: the stream is out of step and the caller watches
// again. A line longer than `max_line_bytes` is an error too, so a broken
// server cannot make the decoder buffer without bound.
//
// Thread safety: not thread-safe; one decoder per stream.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace gpulet::kube {

enum class EventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  EventType type = EventType::kAdded;
  // The object; for kError the metav1.Status (api_status.h decodes it).
  nlohmann::json object{};
};

// "ADDED", "MODIFIED", ...
const char* EventTypeName(EventType type);

// Decodes one line of a watch stream.
absl::StatusOr<WatchEvent> DecodeWatchEvent(absl::string_view line);

// metadata.resourceVersion of an object; "" when it has none.
std::string ResourceVersionOf(const nlohmann::json& object);

class WatchDecoder {
 public:
  static constexpr size_t kDefaultMaxLine = 16 << 20;
  explicit WatchDecoder(size_t max_line_bytes = kDefaultMaxLine)
      : max_line_(max_line_bytes) {}

  // Appends `chunk` and moves each complete event to `out` (appended, in
  // order). After an error the decoder stays failed.
  absl::Status Feed(absl::string_view chunk, std::vector<WatchEvent>* out);

  // The stream ended: a last line without its newline is decoded too
  // (blank space is ignored).
  absl::Status Finish(std::vector<WatchEvent>* out);

 private:
  absl::Status TakeLine(absl::string_view line, std::vector<WatchEvent>* out);

  size_t max_line_;
  std::string pending_;
  absl::Status failed_;
};

}  // namespace gpulet::kube
