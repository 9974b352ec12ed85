#include "src/dra/runner/dra_config.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/common/status_macros.h"
#include "src/base/config/parser.h"
#include "src/gpu/health/health_config.h"

namespace gpulet::daemon {
namespace {

// `value` of flag `flag` as one of `names`; unchanged `*out` when empty.
template <typename E>
absl::Status ParseFlag(const std::string& flag, const std::string& value,
                       const config::EnumNames<E>& names, E* out) {
  if (value.empty()) return absl::OkStatus();
  std::vector<std::string> spelled;
  for (const auto& [name, e] : names) {
    if (name == value) {
      *out = e;
      return absl::OkStatus();
    }
    spelled.push_back(name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": unknown value \"", value,
                   "\" (expected one of: ", absl::StrJoin(spelled, ", "), ")"));
}

void Override(const std::string& flag, std::string& value) {
  if (!flag.empty()) value = flag;
}

}  // namespace

absl::StatusOr<config::Config> LoadDraConfigFile(const std::string& path) {
  if (path.empty()) return config::Config{};
  return config::LoadConfigFile(path);
}

absl::StatusOr<DraSettings> ResolveDraSettings(const DraConfigFlags& flags,
                                               const config::Config& file,
                                               const config::EnvLookup& env) {
  DraSettings out;
  absl::StatusOr<health::MonitorOptions> health =
      health::OptionsFromConfig(file.health, env);
  if (!health.ok()) return health.status();
  out.health = *std::move(health);
  out.dra = file.dra;
  GPULET_RETURN_IF_ERROR(
      ParseFlag("--unhealthy-devices", flags.unhealthy_devices,
                config::UnhealthyDevicesNames(), &out.dra.unhealthy_devices));
  GPULET_RETURN_IF_ERROR(
      ParseFlag("--unhealthy-taint-effect", flags.unhealthy_taint_effect,
                config::TaintEffectNames(), &out.dra.unhealthy_effect));
  GPULET_RETURN_IF_ERROR(
      ParseFlag("--lost-taint-effect", flags.lost_taint_effect,
                config::TaintEffectNames(), &out.dra.lost_effect));
  out.metrics_address = file.metrics.address;
  out.metrics_tls = {.cert_file = file.metrics.tls_cert_file,
                     .key_file = file.metrics.tls_key_file,
                     .client_ca_file = file.metrics.client_ca_file};
  Override(flags.metrics_address, out.metrics_address);
  Override(flags.metrics_tls.cert_file, out.metrics_tls.cert_file);
  Override(flags.metrics_tls.key_file, out.metrics_tls.key_file);
  Override(flags.metrics_tls.client_ca_file, out.metrics_tls.client_ca_file);
  GPULET_RETURN_IF_ERROR(http::ValidateMetricsTls(out.metrics_tls));
  return out;
}

}  // namespace gpulet::daemon
