// Service: what an h2 server answers, by gRPC method path
// ("/package.Service/Method"). Messages cross this seam serialized, without
// the 5-byte prefix; the transport frames them.
//
// - A unary method gets the request message and returns the response
//   message or a status. It runs inline on the server's loop thread, so it
//   must not block.
// - A server-streaming method gets the request message and returns a
//   StreamSource (or a status, which ends the call at once). The loop asks
//   the source for its next step whenever Server::WakeStreams() was called,
//   and when the stream may send again (one message in flight at a time).
//
// Thread safety: the handlers and sources run on the loop thread only; the
// handlers may be called again before an earlier stream ended.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpulet::h2 {

// One step of a stream: a message to send (shared, so every stream can send
// the same bytes), the end of the stream with a status, or nothing for now.
struct StreamStep {
  std::shared_ptr<const std::string> message;
  std::optional<absl::Status> end;
};

class StreamSource {
 public:
  virtual ~StreamSource() = default;
  // REQUIRES: the previous message was sent.
  virtual StreamStep Next() = 0;
  // The stream ended (`why`: the client cancelled or went away, the
  // deadline passed, the server stopped, or the source's own end); called
  // once, before the source is destroyed.
  virtual void Ended(std::string_view why) = 0;
};

using UnaryMethod =
    std::function<absl::StatusOr<std::string>(std::string_view request)>;
using StreamMethod =
    std::function<absl::StatusOr<std::unique_ptr<StreamSource>>(
        std::string_view request)>;

struct Service {
  absl::flat_hash_map<std::string, UnaryMethod> unary;
  absl::flat_hash_map<std::string, StreamMethod> streaming;
};

}  // namespace gpulet::h2
