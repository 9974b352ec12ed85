// Where to find libnvidia-ml.so.1: the search NVIDIA's device plugin does
// under a driver root (--driver-root / NVIDIA_DRIVER_ROOT), as a pure
// function over an injected "does this file exist" check so it is tested
// without touching the file system. dynamic_library.cc turns the result into
// dlopen calls; nothing here loads anything.
//
// Order of attempts:
//   - an explicit library path: only that file;
//   - driver root "/": the bare name through the dynamic linker first (so
//     LD_LIBRARY_PATH and ld.so.cache work as they do for NVIDIA's plugin),
//     then every candidate below that exists;
//   - any other root: every candidate that exists, in order; none at all is
//     an error (the container's own libraries are never used by accident).
// Candidates are <root>/usr/lib64, /usr/lib/x86_64-linux-gnu,
// /usr/lib/aarch64-linux-gnu, /lib64, /lib/x86_64-linux-gnu,
// /lib/aarch64-linux-gnu and /glibc/lib, each + "/libnvidia-ml.so.1" — the
// list of NVIDIA's root.tryResolveLibrary.
//
// Thread safety: pure functions; thread-safe if `is_file` is.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gpulet::nvml {

inline constexpr char kNvmlLibraryName[] = "libnvidia-ml.so.1";

struct LoadOptions {
  // Root of the driver installation, like NVIDIA's --driver-root.
  std::string driver_root = "/";
  // Explicit library file; when set it wins over the search.
  std::string library_path;
};

// True when `path` names a regular file, following symlinks (a directory
// named libnvidia-ml.so.1 does not count, as in NVIDIA's plugin).
using IsFileFn = std::function<bool(const std::string& path)>;

// The real check, stat(2) based.
bool IsRegularFile(const std::string& path);

// Every candidate file under `driver_root`, in search order. Joins without
// doubling slashes: root "/" gives "/usr/lib64/libnvidia-ml.so.1".
std::vector<std::string> CandidatePaths(absl::string_view driver_root);

struct SearchPlan {
  // Arguments for dlopen, in order; the first that loads wins. Empty when
  // nothing was found (only possible for a driver root other than "/").
  std::vector<std::string> attempts;
  // Every place looked at, for error messages.
  std::vector<std::string> searched;
};

SearchPlan PlanLibrarySearch(const LoadOptions& options,
                             const IsFileFn& is_file);

}  // namespace gpulet::nvml
