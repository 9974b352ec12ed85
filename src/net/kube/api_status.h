// Turning API server answers into absl::Status: the HTTP status code and the
// metav1.Status body the server sends with every error
//   {"kind":"Status","status":"Failure","message":"nodes \"n9\" not found",
//    "reason":"NotFound","code":404}
// become one Status whose message is "<what>: <code> <reason>: <message>"
// and whose code a caller can branch on:
//
//   400 BadRequest, 422 Invalid  -> InvalidArgument
//   401 Unauthorized             -> Unauthenticated
//   403 Forbidden                -> PermissionDenied
//   404 NotFound                 -> NotFound
//   409 AlreadyExists            -> AlreadyExists
//   409 Conflict (other 409s)    -> Aborted (re-read and try again)
//   410 Gone / Expired           -> FailedPrecondition, IsGone() true
//   429 TooManyRequests          -> ResourceExhausted, RetryAfter() set
//   500 -> Internal, 501 -> Unimplemented, 504 -> DeadlineExceeded,
//   other 5xx                    -> Unavailable
//   anything else                -> Unknown
//
// The HTTP code, the reason and Retry-After travel as payloads, so callers
// ask HttpCode(), IsGone(), RetryAfter() instead of parsing messages.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "src/net/kube/transport.h"

namespace gpulet::kube {

// The Status for a non-2xx response to the request described by `what`
// ("GET /api/v1/nodes/n1"). OK for a 2xx response.
absl::Status StatusFromResponse(absl::string_view what,
                                const Response& response);

// The Status for a metav1.Status object (a watch stream's ERROR event);
// its `code` field gives the HTTP code (500 when missing).
absl::Status StatusFromApiStatus(absl::string_view what,
                                 const nlohmann::json& status);

// The HTTP code behind a Status made here; 0 for any other Status.
int HttpCode(const absl::Status& status);
// The metav1.Status reason ("NotFound", "Expired"); "" when none.
std::string Reason(const absl::Status& status);
// True for 410 Gone: a resourceVersion or continue token too old to serve;
// the caller lists again.
bool IsGone(const absl::Status& status);
// True when the server has not caught up with the resourceVersion asked
// for (a cause ResourceVersionTooLarge, HTTP 504): list at "" instead.
bool IsResourceVersionTooLarge(const absl::Status& status);
// The server's Retry-After, when it sent one in seconds.
std::optional<absl::Duration> RetryAfter(const absl::Status& status);

// "CODE: message" without the payloads, for log lines.
std::string ForLog(const absl::Status& status);

// Parses a response body that must be one JSON object. InvalidArgument
// "<what>: response is not a JSON object: ..." otherwise.
absl::StatusOr<nlohmann::json> DecodeObject(absl::string_view what,
                                            absl::string_view body);

}  // namespace gpulet::kube
