// CallUnary: one gRPC unary call over HTTP/2 on a unix socket, on
// nghttp2, with a connection of its own (opened, used once, closed). The
// registration with the kubelet makes one such call per attempt, so there
// is no channel to keep and no reconnect backoff to wait out.
//
// Thread safety: a free function; calls on different threads are
// independent.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gpulet::h2 {

// Asked every 50 ms while the call waits; true cancels it (RST_STREAM) and
// the result is CANCELLED.
using CancelCheck = std::function<bool()>;

// Sends `request` (a serialized message) to `method` ("/pkg.Service/Name")
// on the server at `socket_path`, with `timeout` as the deadline (sent as
// grpc-timeout, and enforced here). Returns the response message, or the
// server's status (code and percent-decoded message); UNAVAILABLE when it
// cannot connect or the connection breaks, DEADLINE_EXCEEDED when the time
// is up, INTERNAL for an answer that is not gRPC.
absl::StatusOr<std::string> CallUnary(const std::string& socket_path,
                                      const std::string& method,
                                      std::string_view request,
                                      absl::Duration timeout,
                                      const CancelCheck& cancelled = nullptr);

}  // namespace gpulet::h2
