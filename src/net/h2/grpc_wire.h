// The gRPC-over-HTTP/2 conventions the h2 transport needs, as pure
// functions: the 5-byte message prefix (compressed flag, big-endian length),
// the grpc-timeout header, and grpc-message's percent-encoding.
//
// Thread safety: pure functions.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpulet::h2 {

inline constexpr size_t kPrefixSize = 5;
// gRPC's default receive limit (4 MiB per message).
inline constexpr size_t kMaxMessageSize = 4 * 1024 * 1024;

// The prefix of an uncompressed message of `size` bytes.
std::string MessagePrefix(size_t size);

// The one message a unary request (or a stream's request) carries: the
// payload of `body`, which must hold exactly one uncompressed message of at
// most `max_size` bytes. UNIMPLEMENTED for a compressed message, INTERNAL
// for a truncated or trailing frame, RESOURCE_EXHAUSTED past `max_size`.
absl::StatusOr<std::string_view> SingleMessage(
    std::string_view body, size_t max_size = kMaxMessageSize);

// grpc-timeout: 1 to 8 digits and a unit (H, M, S, m, u, n).
// INVALID_ARGUMENT naming the header otherwise.
absl::StatusOr<std::chrono::nanoseconds> ParseTimeout(std::string_view value);

// grpc-timeout's text for `timeout` (rounded up, at most 8 digits).
std::string FormatTimeout(std::chrono::nanoseconds timeout);

// grpc-message: bytes outside printable ASCII, and '%', as %XX.
std::string PercentEncode(absl::string_view message);
// The reverse; a malformed escape is kept as it is (as gRPC does).
std::string PercentDecode(absl::string_view encoded);

}  // namespace gpulet::h2
