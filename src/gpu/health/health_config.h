// The health monitor's options from the config file's `health:` section and
// the environment, with gpulet's precedence: the environment variables
// (NVIDIA's DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS and
// GPULET_HEALTH_QUIET_PERIOD) override the file, which overrides the
// defaults (docs/health.md). No flag sets health options.
//
// Pure: the environment comes in through an EnvLookup. Thread safety: free
// functions over values.
#pragma once

#include "absl/status/statusor.h"
#include "src/base/config/config.h"
#include "src/base/config/resolve.h"
#include "src/gpu/health/xid_policy.h"

namespace gpulet::health {

// The options the file alone gives (defaults for what it does not say):
//   disabled: true      -> nothing monitored (as DP_DISABLE_HEALTHCHECKS=all)
//   quietPeriod         -> quiet_period
//   ignoredXids         -> added to the default ignored Xids
//   xids[].action       -> ignore: added to the ignored Xids;
//                          unhealthy / reset: removed from them (so a
//                          default-ignored Xid becomes fatal) and recorded
//                          in xid_recovery.
// `file` is assumed validated (config::Validate); if an Xid is in two rules
// anyway, the later one wins.
MonitorOptions FileOptions(const config::Health& file);

// FileOptions, then the two DP_* variables (ApplyHealthEnv), then
// GPULET_HEALTH_QUIET_PERIOD; unset or empty variables leave the file's
// value. Errors: InvalidArgument naming the variable and the bad token
// (ParseHealthEnv, ParseQuietPeriod). `env` may be empty (no environment).
absl::StatusOr<MonitorOptions> OptionsFromConfig(const config::Health& file,
                                                 const config::EnvLookup& env);

}  // namespace gpulet::health
