#include "src/gpu/health/health_config.h"

#include <optional>
#include <string>

namespace gpulet::health {

MonitorOptions FileOptions(const config::Health& file) {
  MonitorOptions options;
  if (file.disabled) {
    options.disabled = true;
    options.xids_disabled = true;
    options.dbe_unhealthy = false;
  }
  if (file.quiet_period.has_value()) options.quiet_period = *file.quiet_period;
  options.ignored_xids.insert(file.ignored_xids.begin(),
                              file.ignored_xids.end());
  for (const config::XidRule& rule : file.xids) {
    for (uint64_t xid : rule.codes) {
      options.xid_recovery.erase(xid);
      switch (rule.action) {
        case config::XidAction::kIgnore:
          options.ignored_xids.insert(xid);
          break;
        case config::XidAction::kUnhealthy:
          options.ignored_xids.erase(xid);
          options.xid_recovery[xid] = XidRecovery::kQuietPeriod;
          break;
        case config::XidAction::kReset:
          options.ignored_xids.erase(xid);
          options.xid_recovery[xid] = XidRecovery::kReset;
          break;
      }
    }
  }
  return options;
}

absl::StatusOr<MonitorOptions> OptionsFromConfig(const config::Health& file,
                                                 const config::EnvLookup& env) {
  auto lookup = [&env](const char* name) -> std::optional<std::string> {
    if (!env) return std::nullopt;
    return env(name);
  };
  const std::optional<std::string> disable = lookup("DP_DISABLE_HEALTHCHECKS");
  const std::optional<std::string> enable = lookup("DP_ENABLE_HEALTHCHECKS");
  const std::optional<std::string> quiet = lookup("GPULET_HEALTH_QUIET_PERIOD");
  MonitorOptions base = FileOptions(file);
  const absl::Duration file_quiet = base.quiet_period;
  absl::StatusOr<MonitorOptions> options =
      ApplyHealthEnv(std::move(base), disable ? disable->c_str() : nullptr,
                     enable ? enable->c_str() : nullptr);
  if (!options.ok()) return options.status();
  absl::StatusOr<absl::Duration> period =
      ParseQuietPeriod(quiet ? quiet->c_str() : nullptr, file_quiet);
  if (!period.ok()) return period.status();
  options->quiet_period = *period;
  return options;
}

}  // namespace gpulet::health
