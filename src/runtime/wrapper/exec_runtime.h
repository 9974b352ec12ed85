// Handing over to the real OCI runtime (runc by default): finding its
// binary and replacing this process with it, argv unchanged apart from
// argv[0].
//
// Thread safety: ExecRuntime replaces the process; call it last.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpulet::runtime {

// The path of `runtime`: itself when it contains '/', else the first
// executable `runtime` in the colon-separated `path_env`. An error when
// nothing is found, or when the result is `self_exe` (gpulet-runtime
// configured as its own real runtime would exec itself forever).
absl::StatusOr<std::string> FindRuntime(const std::string& runtime,
                                        const std::string& path_env,
                                        const std::string& self_exe);

// execv(runtime_path, {runtime_path, args...}); returns only on failure.
absl::Status ExecRuntime(const std::string& runtime_path,
                         const std::vector<std::string>& args);

}  // namespace gpulet::runtime
