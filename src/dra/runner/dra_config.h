// What `gpulet dra` runs with from its flags and its config file: the
// file is the device plugin's `version: v1` file (src/base/config), of
// which `gpulet dra` reads three sections, each overridden by its flags and
// environment variables where it has them:
//   health:   the health monitor's policy (per-Xid actions, quiet period,
//             disabled), as health::OptionsFromConfig merges it with
//             DP_DISABLE_HEALTHCHECKS, DP_ENABLE_HEALTHCHECKS and
//             GPULET_HEALTH_QUIET_PERIOD (no flag sets it);
//   metrics:  the /metrics address and TLS files, under the --metrics-*
//             flags;
//   dra:      unhealthy devices dropped or tainted, and the taints'
//             effects, under --unhealthy-devices, --unhealthy-taint-effect
//             and --lost-taint-effect.
// The file's other sections are the device plugin's and are not used here.
//
// Thread safety: pure functions, apart from LoadDraConfigFile reading the
// file.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "src/base/config/config.h"
#include "src/base/config/resolve.h"
#include "src/gpu/health/xid_policy.h"
#include "src/net/http/metrics_handler.h"

namespace gpulet::daemon {

// The flags that override the file; empty: not given.
struct DraConfigFlags {
  std::string config_file;
  std::string unhealthy_devices;       // "drop" | "taint"
  std::string unhealthy_taint_effect;  // "None" | "NoSchedule" | "NoExecute"
  std::string lost_taint_effect;
  std::string metrics_address;
  http::MetricsTls metrics_tls;
};

struct DraSettings {
  health::MonitorOptions health;
  config::Dra dra;
  std::string metrics_address;  // empty: no metrics server
  http::MetricsTls metrics_tls;
};

// The file at `path` (parsed and its values checked, config::ParseConfig),
// or the defaults when `path` is empty. Errors name the file and key.
absl::StatusOr<config::Config> LoadDraConfigFile(const std::string& path);

// `file`'s sections overridden by `flags` and the environment. Errors:
// InvalidArgument naming the flag or the variable.
absl::StatusOr<DraSettings> ResolveDraSettings(const DraConfigFlags& flags,
                                               const config::Config& file,
                                               const config::EnvLookup& env);

}  // namespace gpulet::daemon
