// GPULET_CHECK: states an invariant that must hold whatever the input or
// the environment; when it does not, the program has a bug, so it logs
// "check failed: <condition>: <message>" at ERROR (logging.h) and aborts.
// Bad input and failing I/O are reported with absl::Status instead.
//
//   GPULET_CHECK(family.ok()) << family.status().message();
//
// The message after << is only evaluated when the check fails.
//
// Thread safety: may be used from any thread.
#pragma once

#include <sstream>

namespace gpulet::common {

// Collects the message of a failed check; its destructor logs and aborts.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  const char* condition_;
  std::ostringstream stream_;  // the message after <<
};

}  // namespace gpulet::common

#define GPULET_CHECK(condition) \
  while (!(condition))          \
  ::gpulet::common::CheckFailure(__FILE__, __LINE__, #condition).stream()
