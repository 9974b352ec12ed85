// The client end of the NVML simulator's control channel, used by
// `gpulet sim ...` to inject faults into a simulator running inside another
// process (the socket is named by that process's $GPULET_SIM_SOCKET). The
// request grammar is in control_protocol.h.
//
// Thread safety: stateless; every call opens its own connection.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace gpulet::sim {

// Sends one command line (without newline) and returns the payload after
// "ok" (may be empty; for `status`, a JSON object). Errors:
//   Unavailable       nothing listens at socket_path (no such file, refused)
//   InvalidArgument   the server answered "error <message>" (the message is
//                     kept as is), or `line`/`socket_path` is unusable
//   DeadlineExceeded  no complete reply within timeout_ms
//   Internal          a malformed reply
absl::StatusOr<std::string> SendControlCommand(const std::string& socket_path,
                                               const std::string& line,
                                               int timeout_ms = 2000);

}  // namespace gpulet::sim
