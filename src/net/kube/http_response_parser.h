// HttpResponseParser: reads one HTTP/1.1 response from bytes fed in
// arbitrary pieces, as they come off a connection. It finds the status,
// the headers the API client needs (Retry-After, Connection) and the
// body's framing (Content-Length, chunked, or until the server closes),
// and hands the body's bytes to a callback as they arrive, chunked
// encoding removed. It does no I/O, so it is table-tested and fuzzed
// (http_response_fuzz.cc).
//
// Bounds: the status line and headers together (and the trailers after a
// chunked body) may take at most `max_head_bytes`, a chunk-size line at
// most kMaxChunkLine bytes; past them Feed() fails with ResourceExhausted.
// The body's size is the caller's to bound (it sees every byte). Malformed
// input is InvalidArgument naming what was wrong. Interim 1xx responses
// are skipped.
//
// Thread safety: none; one parser per response.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gpulet::kube {

class HttpResponseParser {
 public:
  static constexpr size_t kMaxChunkLine = 4096;

  // Receives body bytes; returns false to stop reading the response.
  using BodyFn = std::function<bool(absl::string_view)>;

  // `head_request`: the response to a HEAD has no body whatever its headers.
  explicit HttpResponseParser(size_t max_head_bytes = 64 << 10,
                              bool head_request = false)
      : max_head_bytes_(max_head_bytes), head_request_(head_request) {}

  // Consumes `data`, passing body bytes to `on_body`. Bytes after the end
  // of the response make the connection unfit for reuse (keep_alive()
  // false). After an error the parser stays failed.
  absl::Status Feed(absl::string_view data, const BodyFn& on_body);

  // The server closed the connection: ends a body read until close, and
  // is an error when the response was not complete.
  absl::Status Finish();

  bool done() const { return state_ == State::kDone; }
  bool stopped() const { return stopped_; }  // on_body returned false
  bool head_done() const { return status_ != 0 && state_ > State::kHeaders; }
  // Any byte of a response arrived (false: the server said nothing).
  bool started() const { return started_; }

  int status() const { return status_; }
  const std::string& retry_after() const { return retry_after_; }
  // The connection may carry the next request: HTTP/1.1 without
  // "Connection: close", a body with a known end, nothing extra after it.
  bool keep_alive() const { return keep_alive_ && done(); }

 private:
  enum class State {
    kStatusLine,
    kHeaders,
    kBody,  // Content-Length bytes
    kChunkSize,
    kChunkData,
    kChunkDataEnd,  // the CRLF after a chunk's data
    kTrailers,
    kUntilClose,
    kDone,
    kFailed,
  };

  absl::Status OnLine(absl::string_view line);
  absl::Status OnStatusLine(absl::string_view line);
  absl::Status OnHeader(absl::string_view line);
  absl::Status OnHeadEnd();
  absl::Status OnChunkSize(absl::string_view line);
  absl::Status Fail(absl::Status status);

  const size_t max_head_bytes_;
  const bool head_request_;
  State state_ = State::kStatusLine;
  std::string line_;       // a line not yet ended by LF
  size_t head_bytes_ = 0;  // status line, headers and trailers so far
  bool started_ = false;
  bool stopped_ = false;
  int status_ = 0;
  bool http10_ = false;
  bool keep_alive_ = true;
  bool chunked_ = false;
  bool has_length_ = false;
  uint64_t remaining_ = 0;  // of the body or of the current chunk
  std::string retry_after_;
};

}  // namespace gpulet::kube
