// gpulet's entry point; everything happens in cli::Run.
#include <iostream>

#include "absl/synchronization/mutex.h"
#include "src/cli/app.h"

int main(int argc, char** argv) {
  // Debian builds abseil with absl::Mutex's deadlock detection on: every
  // lock taken (gRPC's own included) is looked up and recorded in a global
  // lock-order graph. That was about a seventh of the instructions of a
  // served Allocate (callgrind). gpulet's lock order is checked at compile
  // time by clang's thread-safety analysis; the tests keep the runtime check.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return gpulet::cli::Run(argc, argv, std::cout, std::cerr);
}
