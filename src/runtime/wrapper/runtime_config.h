// The configuration file of `gpulet-runtime`, the OCI runtime wrapper
// (default /etc/gpulet/runtime.yaml, overridden by GPULET_RUNTIME_CONFIG):
//
//   runtime: runc                    # path, or a name looked up in PATH
//   driverRoot: /                    # where the driver's files live
//   specDirs: [/etc/cdi, /var/run/cdi]  # CDI spec dirs, later wins
//   acceptEnvvarUnprivileged: true   # may unprivileged containers ask
//                                    # for GPUs through NVIDIA_VISIBLE_DEVICES
//   vendor: nvidia.com               # CDI kind that device IDs map to
//   class: gpu
//   logFile: ""                      # append log lines here as well
//
// Unknown keys are errors naming the key. Parsing takes a string; loading a
// file is a thin wrapper. This is the only place that reads the file, since
// no layer above config includes yaml-cpp.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpulet::config {

inline constexpr char kDefaultRuntimeConfigPath[] = "/etc/gpulet/runtime.yaml";
inline constexpr char kRuntimeConfigEnv[] = "GPULET_RUNTIME_CONFIG";

struct RuntimeConfig {
  std::string runtime = "runc";
  std::string driver_root = "/";
  std::vector<std::string> spec_dirs = {"/etc/cdi", "/var/run/cdi"};
  bool accept_envvar_unprivileged = true;
  std::string vendor = "nvidia.com";
  std::string device_class = "gpu";
  std::string log_file;
  bool operator==(const RuntimeConfig&) const = default;
};

// Parses the YAML text of a runtime config; `source` names it in errors
// ("<source>:<line>:<col>: <key>: <what>"). An empty document gives the
// defaults.
absl::StatusOr<RuntimeConfig> ParseRuntimeConfig(absl::string_view text,
                                                 const std::string& source);

// Reads and parses `path`. A missing file gives the defaults when
// `missing_ok` (the default path), and NotFound otherwise (a path the user
// named).
absl::StatusOr<RuntimeConfig> LoadRuntimeConfig(const std::string& path,
                                                bool missing_ok);

}  // namespace gpulet::config
