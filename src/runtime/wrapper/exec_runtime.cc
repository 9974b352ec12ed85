#include "src/runtime/wrapper/exec_runtime.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/base/common/errors.h"

namespace gpulet::runtime {
namespace {

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

}  // namespace

absl::StatusOr<std::string> FindRuntime(const std::string& runtime,
                                        const std::string& path_env,
                                        const std::string& self_exe) {
  std::string found;
  if (runtime.find('/') != std::string::npos) {
    if (::access(runtime.c_str(), X_OK) != 0) {
      return common::ErrnoToStatus(
          errno, absl::StrCat("runtime ", runtime, " (runtime in the config)"));
    }
    found = runtime;
  } else {
    for (absl::string_view dir : absl::StrSplit(path_env, ':')) {
      if (dir.empty()) continue;
      std::string candidate = absl::StrCat(dir, "/", runtime);
      if (::access(candidate.c_str(), X_OK) == 0) {
        found = std::move(candidate);
        break;
      }
    }
    if (found.empty()) {
      return absl::NotFoundError(absl::StrCat(
          "runtime \"", runtime, "\" not found in PATH=", path_env));
    }
  }
  if (!self_exe.empty() && RealPath(found) == RealPath(self_exe)) {
    return absl::FailedPreconditionError(
        absl::StrCat("runtime ", found,
                     " is gpulet-runtime itself; set runtime to the "
                     "real OCI runtime (e.g. /usr/sbin/runc)"));
  }
  return found;
}

absl::Status ExecRuntime(const std::string& runtime_path,
                         const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  argv.reserve(args.size() + 1);
  argv.push_back(runtime_path);
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> ptrs;
  ptrs.reserve(argv.size() + 1);
  for (std::string& arg : argv) ptrs.push_back(arg.data());
  ptrs.push_back(nullptr);
  ::execv(runtime_path.c_str(), ptrs.data());
  return common::ErrnoToStatus(errno, absl::StrCat("exec ", runtime_path));
}

}  // namespace gpulet::runtime
