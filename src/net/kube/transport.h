// Transport: one HTTP exchange with the Kubernetes API server. The seam
// between the API client's logic (paging, watching, retries, rate limits,
// error decoding: client.h) and the wire (HTTP/1.1 over TLS on OpenSSL:
// tls_transport.h), so the logic is tested against a fake.
//
// A transport owns the connection details and the credentials: it adds
// authentication (client certificate, bearer token) to every request itself,
// so callers never handle tokens, and it must never put a credential into a
// log line or a Status message.
//
// Errors: a Status only when no HTTP response arrived (connection refused,
// TLS failure, timeout, cancelled); any HTTP status, 4xx and 5xx included, is
// a Response for the caller to interpret. Connection-level failures are
// Unavailable (worth retrying), a server certificate that does not verify
// is FailedPrecondition (a configuration problem), a timeout is
// DeadlineExceeded, a stop request is Cancelled.
//
// Thread safety: implementations may be called from any number of threads
// at once.
#pragma once

#include <functional>
#include <stop_token>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gpulet::kube {

struct Request {
  std::string method = "GET";  // GET, POST, PATCH, PUT, DELETE
  std::string path{};          // "/api/v1/nodes/n1?limit=500", escaped
  std::string content_type{};  // for a body
  std::string body{};
  // The whole exchange, streamed body included.
  absl::Duration timeout = absl::Seconds(30);
  // The longest wait for the next bytes of the answer (a watch: its idle
  // timeout); past it the exchange fails with DeadlineExceeded, naming it.
  absl::Duration idle_timeout = absl::InfiniteDuration();
};

struct Response {
  int status = 0;
  std::string body{};         // empty for a streamed 2xx body
  std::string retry_after{};  // the Retry-After header, as sent
};

// Receives a streamed response body as it arrives, in arbitrary pieces.
// Returns false to end the exchange early.
using ChunkFn = std::function<bool(absl::string_view chunk)>;

class Transport {
 public:
  virtual ~Transport() = default;

  // Sends `request` and reads the whole response; a stop request ends it
  // at once (Cancelled).
  virtual absl::StatusOr<Response> Do(const Request& request,
                                      std::stop_token stop = {}) = 0;

  // Sends `request`; a 2xx body goes to `on_chunk` as it arrives and is not
  // kept, any other body is collected into the Response. Returns when the
  // server ends the response or `on_chunk` returns false (OK either way),
  // or when `stop` is requested (Cancelled, at once).
  virtual absl::StatusOr<Response> Stream(const Request& request,
                                          const ChunkFn& on_chunk,
                                          std::stop_token stop) = 0;
};

}  // namespace gpulet::kube
