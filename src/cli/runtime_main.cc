// gpulet-runtime: an OCI runtime wrapper. Configure it as a container
// runtime (containerd, CRI-O) in place of runc; it is invoked with runc's
// command line. On `create` and `run` it injects the requested GPUs into
// <bundle>/config.json (src/runtime/wrapper/create.h), then execs the real
// runtime with the same arguments; every other subcommand is exec'd straight
// through. `gpulet-runtime hook update-ldcache --folder DIR...` is the
// createContainer hook that gpulet's CDI specs name.
//
// This file only reads argv and the environment; the work is in
// gpulet_runtime. See docs/runtime.md.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "src/base/common/logging.h"
#include "src/runtime/wrapper/create.h"
#include "src/runtime/wrapper/exec_runtime.h"
#include "src/runtime/wrapper/ldcache_hook.h"
#include "src/runtime/wrapper/runc_args.h"
#include "src/runtime/wrapper/runtime_config.h"

namespace {

using gpulet::config::RuntimeConfig;

int Fail(const absl::Status& status) {
  std::string line = "gpulet-runtime: ";
  line.append(status.message().data(), status.message().size());
  line.push_back('\n');
  // One write so the line is not interleaved with runc's own output.
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
  return 1;
}

std::string Getenv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Logs go to the configured file only: the runtime's stderr belongs to its
// caller (containerd reads it as the error text of a failed create).
bool OpenLogFile(const std::string& path) {
  if (path.empty()) return false;
  int fd =
      ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  gpulet::common::SetLogFd(fd);
  // Details that must not reach the pod's events (ignored mounts, broken
  // spec files) are logged at level 1, so only here.
  gpulet::common::SetVerbosity(1);
  return true;
}

int RunHook(const std::vector<std::string>& args) {
  if (args.size() < 2 || args[1] != "update-ldcache") {
    return Fail(absl::InvalidArgumentError(
        "usage: gpulet-runtime hook update-ldcache [--folder DIR]... "
        "[--ldconfig-path PATH]"));
  }
  std::vector<std::string> folders;
  std::string ldconfig = gpulet::runtime::kDefaultLdconfigPath;
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& arg = args[i];
    std::string* target = nullptr;
    std::string value;
    if (arg == "--folder" || arg == "--ldconfig-path") {
      if (i + 1 >= args.size()) {
        return Fail(absl::InvalidArgumentError(arg + " needs a value"));
      }
      value = args[++i];
      target = arg == "--folder" ? nullptr : &ldconfig;
    } else if (absl::StartsWith(arg, "--folder=")) {
      value = arg.substr(9);
    } else if (absl::StartsWith(arg, "--ldconfig-path=")) {
      value = arg.substr(16);
      target = &ldconfig;
    } else {
      return Fail(absl::InvalidArgumentError("unknown hook flag " + arg));
    }
    if (target != nullptr) {
      *target = value;
    } else {
      folders.push_back(value);
    }
  }
  std::string state(std::istreambuf_iterator<char>(std::cin), {});
  absl::Status status =
      gpulet::runtime::UpdateLdCache(state, folders, ldconfig);
  return status.ok() ? 0 : Fail(status);
}

absl::Status Prepare(const gpulet::runtime::RuncInvocation& invocation,
                     const RuntimeConfig& config, bool logging) {
  gpulet::runtime::PrepareOptions options;
  options.config = config;
  absl::StatusOr<gpulet::runtime::PrepareResult> result =
      gpulet::runtime::PrepareBundle(invocation.bundle, options);
  if (!result.ok()) return result.status();
  if (logging && result->modified) {
    GPULET_LOG(INFO) << "container " << invocation.container_id << ": injected "
                     << absl::StrJoin(result->injected, ",");
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "hook") return RunHook(args);

  const std::string named = Getenv(gpulet::config::kRuntimeConfigEnv);
  absl::StatusOr<RuntimeConfig> config = gpulet::config::LoadRuntimeConfig(
      named.empty() ? gpulet::config::kDefaultRuntimeConfigPath : named,
      /*missing_ok=*/named.empty());
  if (!config.ok()) return Fail(config.status());
  const bool logging = OpenLogFile(config->log_file);

  const gpulet::runtime::RuncInvocation invocation =
      gpulet::runtime::ParseRuncArgs(args);
  if (gpulet::runtime::CreatesContainer(invocation)) {
    if (absl::Status s = Prepare(invocation, *config, logging); !s.ok()) {
      if (logging) GPULET_LOG(ERROR) << s.message();
      return Fail(s);
    }
  }
  absl::StatusOr<std::string> runtime = gpulet::runtime::FindRuntime(
      config->runtime, Getenv("PATH"), "/proc/self/exe");
  if (!runtime.ok()) return Fail(runtime.status());
  return Fail(gpulet::runtime::ExecRuntime(*runtime, args));
}
