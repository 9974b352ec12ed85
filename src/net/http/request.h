// HTTP/1.1 messages as values: a request as the server received it, the
// response a handler returns, and the pure parsing and formatting between
// them and the wire. Only what gpulet's endpoints need: bodies are sent
// with Content-Length (a Transfer-Encoding is refused), header names are
// compared ignoring case, no obsolete line folding.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpulet::http {

struct Request {
  std::string method;   // "GET", "POST", ...
  std::string target;   // as sent: "/filter?x=1"
  std::string path;     // the target without its query: "/filter"
  std::string version;  // "HTTP/1.1"
  // In the order sent; names lower-cased, values without surrounding blanks.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // The first value of header `name` (any case); nullptr when absent.
  const std::string* Header(absl::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// A parsed request head and what it says about the body and connection.
struct Head {
  Request request;  // body empty
  uint64_t content_length = 0;
  bool keep_alive = true;        // HTTP/1.1 unless "Connection: close"
  bool expect_continue = false;  // "Expect: 100-continue"
};

// Parses a request head: the request line and header lines, without the
// blank line that ends them. Errors carry the answer to send, see
// StatusCodeFor(): InvalidArgument (400) for a malformed line or a bad or
// repeated Content-Length, FailedPrecondition (411) for a
// Transfer-Encoding, OutOfRange (413) for a Content-Length above
// `max_body_bytes`, Unimplemented (505) for a version other than HTTP/1.x.
absl::StatusOr<Head> ParseHead(absl::string_view head, uint64_t max_body_bytes);

// The HTTP status answering a ParseHead() error.
int StatusCodeFor(const absl::Status& status);

// "OK", "Not Found", ...; "Unknown" for codes gpulet does not send.
absl::string_view ReasonPhrase(int status);

// The response on the wire: status line, Content-Type, Content-Length,
// Connection (keep-alive or close), the body.
std::string FormatResponse(const Response& response, bool keep_alive);

// A plain-text response "<message>\n" with `status`.
Response TextResponse(int status, absl::string_view message);

}  // namespace gpulet::http
