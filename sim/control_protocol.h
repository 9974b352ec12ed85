// The NVML simulator's control protocol: the text both ends of the control
// socket exchange. Shared by the server inside the simulator library
// (control_server.h) and the client used by `gpulet sim` (control_client.h),
// so the grammar lives in one place.
//
// One request per connection: a single line (at most kMaxControlLineBytes),
// answered by "ok\n" followed by an optional payload, or by
// "error <message>\n". <gpu> is an index, a GPU UUID, or a MIG UUID, which
// scopes an event to that MIG device's GPU/compute instance. Commands:
//
//   xid <gpu> <xid> [<gi> <ci>]       an Xid event (XidCriticalError)
//   dbe <gpu>                         a double-bit ECC event
//   sbe <gpu>                         a single-bit ECC event
//   lose <gpu>                        the GPU falls off the bus (+ Xid 79)
//   restore <gpu>                     the GPU comes back
//   wait-error <nvml-code> [<count>]  the next nvmlEventSetWait calls fail
//   status                            a JSON snapshot of the simulator
//
// Everything here is pure string handling: no I/O, no shared state;
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpulet::sim {

inline constexpr size_t kMaxControlLineBytes = 4096;

enum class ControlVerb {
  kXid,
  kDbe,
  kSbe,
  kLose,
  kRestore,
  kWaitError,
  kStatus
};

struct ControlCommand {
  ControlVerb verb = ControlVerb::kStatus;
  // The <gpu> token as written: resolved against the machine by the server.
  std::string gpu;
  uint64_t xid = 0;
  // Explicit "<gi> <ci>" of an xid command; unset means "whatever <gpu> names".
  std::optional<unsigned> gpu_instance;
  std::optional<unsigned> compute_instance;
  unsigned wait_error_code = 0;  // an nvmlReturn_t value, never NVML_SUCCESS
  unsigned wait_error_count = 1;
};

// The command word, e.g. "wait-error".
const char* ControlVerbName(ControlVerb verb);

// Parses one request line (a trailing "\n" or "\r\n" is allowed). Errors are
// InvalidArgument with a message naming the offending token, e.g.
//   unknown command "lsoe" (expected one of: xid dbe sbe lose restore ...)
//   xid: bad Xid "7x": expected a non-negative integer
absl::StatusOr<ControlCommand> ParseControlCommand(absl::string_view line);

// The canonical request line for `command`, without the trailing newline;
// ParseControlCommand(FormatControlCommand(c)) == c.
std::string FormatControlCommand(const ControlCommand& command);

// Replies as written on the wire.
std::string FormatOkReply(absl::string_view payload);
std::string FormatErrorReply(absl::string_view message);

// Splits a complete reply: the payload after "ok\n" (one trailing newline
// removed; may be empty), InvalidArgument(<message>) for "error <message>",
// Internal for anything else.
absl::StatusOr<std::string> ParseControlReply(absl::string_view reply);

}  // namespace gpulet::sim
