#include "src/gpu/health/xid_policy.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace gpulet::health {
namespace {

constexpr const char kDisableVar[] = "DP_DISABLE_HEALTHCHECKS";
constexpr const char kEnableVar[] = "DP_ENABLE_HEALTHCHECKS";
constexpr const char kQuietVar[] = "GPULET_HEALTH_QUIET_PERIOD";

// One variable's value, tokenised.
struct XidList {
  bool all = false;   // "all" (or "xids" for the enable variable)
  bool xids = false;  // "xids" (disable variable only)
  std::set<uint64_t> xids_listed;
};

// NVIDIA's plugin accepts only decimal digits (strconv.ParseUint base 10);
// "+5", "0x1f" and "-68" are not Xids.
bool ParseXid(absl::string_view token, uint64_t& xid) {
  if (token.empty()) return false;
  for (char c : token) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(token, &xid) && xid != 0;
}

absl::StatusOr<XidList> ParseList(const char* variable, const char* value) {
  XidList list;
  if (value == nullptr) return list;
  for (absl::string_view token :
       absl::StrSplit(value, absl::ByAnyChar(", \t\n\r"), absl::SkipEmpty())) {
    const std::string lower = absl::AsciiStrToLower(token);
    uint64_t xid = 0;
    if (lower == "all") {
      list.all = true;
    } else if (lower == "xids") {
      list.xids = true;
    } else if (ParseXid(token, xid)) {
      list.xids_listed.insert(xid);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          variable, ": \"", token,
          "\" is not an Xid (a positive decimal number), \"all\" or \"xids\""));
    }
  }
  return list;
}

std::string JoinXids(const std::set<uint64_t>& xids) {
  return xids.empty() ? "none" : absl::StrJoin(xids, ",");
}

}  // namespace

const std::set<uint64_t>& DefaultIgnoredXids() {
  static const std::set<uint64_t>* const kXids =
      new std::set<uint64_t>(MonitorOptions{}.ignored_xids);
  return *kXids;
}

absl::StatusOr<MonitorOptions> ParseHealthEnv(const char* disable,
                                              const char* enable) {
  return ApplyHealthEnv(MonitorOptions{}, disable, enable);
}

absl::StatusOr<MonitorOptions> ApplyHealthEnv(MonitorOptions options,
                                              const char* disable,
                                              const char* enable) {
  absl::StatusOr<XidList> disabled = ParseList(kDisableVar, disable);
  if (!disabled.ok()) return disabled.status();
  absl::StatusOr<XidList> enabled = ParseList(kEnableVar, enable);
  if (!enabled.ok()) return enabled.status();

  // NVIDIA treats "xids" in the enable variable as "all".
  if (enabled->all || enabled->xids) {
    options.disabled = false;
    options.xids_disabled = false;
    options.dbe_unhealthy = true;
    options.ignored_xids.clear();
    options.enabled_xids.clear();
    return options;
  }
  const bool was_disabled = options.disabled;
  options.xids_disabled =
      options.xids_disabled || disabled->all || disabled->xids;
  options.dbe_unhealthy = options.dbe_unhealthy && !disabled->all;
  options.ignored_xids.insert(disabled->xids_listed.begin(),
                              disabled->xids_listed.end());
  for (uint64_t xid : enabled->xids_listed) options.ignored_xids.erase(xid);
  options.enabled_xids.insert(enabled->xids_listed.begin(),
                              enabled->xids_listed.end());
  // NVIDIA documents that enabled Xids still count when everything is
  // disabled (its code then disables the whole monitor); we follow the
  // documentation.
  options.disabled =
      (was_disabled || disabled->all) && options.enabled_xids.empty();
  return options;
}

absl::StatusOr<absl::Duration> ParseQuietPeriod(const char* value,
                                                absl::Duration fallback) {
  if (value == nullptr || *value == '\0') return fallback;
  absl::Duration period;
  if (!absl::ParseDuration(value, &period) || period < absl::ZeroDuration() ||
      period == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kQuietVar, ": \"", value,
        "\" is not a duration (a non-negative number with a unit, e.g. "
        "\"30s\", \"5m\", \"1h30m\")"));
  }
  return period;
}

bool IsGpuLoss(const HealthEvent& event) {
  if (event.healthy) return false;
  return event.cause == HealthCause::kLost ||
         (event.cause == HealthCause::kXid && event.xid == kXidFallenOffTheBus);
}

const char* CauseLabel(HealthCause cause) {
  switch (cause) {
    case HealthCause::kXid:
      return "xid";
    case HealthCause::kDoubleBitEcc:
      return "double_bit_ecc";
    case HealthCause::kWatchFailed:
      return "watch_failed";
    case HealthCause::kDiscoveryFailed:
      return "discovery_failed";
    case HealthCause::kLost:
      return "lost";
    case HealthCause::kRecoveredQuiet:
      return "quiet_period";
    case HealthCause::kRecoveredReset:
      return "reset";
  }
  return "unknown";
}

bool IsXidIgnored(const MonitorOptions& options, uint64_t xid) {
  if (options.enabled_xids.contains(xid)) return false;
  if (options.disabled || options.xids_disabled) return true;
  return options.ignored_xids.contains(xid);
}

std::string XidDescription(uint64_t xid) {
  // From NVIDIA's Xid catalog; only Xids whose meaning is stable across
  // driver generations.
  static constexpr std::pair<uint64_t, const char*> kKnown[] = {
      {13, "Graphics Engine Exception"},
      {31, "GPU memory page fault"},
      {32, "Invalid or corrupted push buffer stream"},
      {38, "Driver firmware error"},
      {43, "GPU stopped processing"},
      {45, "Preemptive cleanup, due to previous errors"},
      {48, "Double Bit ECC Error"},
      {61, "Internal micro-controller breakpoint/warning"},
      {62, "Internal micro-controller halt"},
      {63, "ECC page retirement or row remapping recording event"},
      {64, "ECC page retirement or row remapper recording failure"},
      {68, "Video processor exception"},
      {69, "Graphics Engine class error"},
      {74, "NVLink Error"},
      {79, "GPU has fallen off the bus"},
      {92, "High single-bit ECC error rate"},
      {94, "Contained ECC error"},
      {95, "Uncontained ECC error"},
      {109, "Context Switch Timeout Error"},
      {119, "GSP RPC Timeout"},
      {120, "GSP Error"},
  };
  for (const auto& [known, description] : kKnown) {
    if (known == xid) return description;
  }
  return "";
}

std::optional<HealthEvent> Decide(const nvml::Event& event, int gpu_index,
                                  const MonitorOptions& options) {
  if (options.disabled) return std::nullopt;
  HealthEvent decision;
  decision.gpu_index = gpu_index;
  if (event.gpu_instance_id != kNoInstance) {
    decision.gpu_instance_id = event.gpu_instance_id;
  }
  if (event.compute_instance_id != kNoInstance) {
    decision.compute_instance_id = event.compute_instance_id;
  }
  if ((event.type & nvmlEventTypeXidCriticalError) != 0) {
    if (IsXidIgnored(options, event.data)) return std::nullopt;
    decision.xid = event.data;
    decision.reason = absl::StrCat("Xid ", event.data);
    const std::string description = XidDescription(event.data);
    if (!description.empty()) {
      absl::StrAppend(&decision.reason, " (", description, ")");
    }
    return decision;
  }
  if ((event.type & nvmlEventTypeDoubleBitEccError) != 0 &&
      options.dbe_unhealthy) {
    decision.reason = "double-bit ECC error";
    decision.cause = HealthCause::kDoubleBitEcc;
    return decision;
  }
  return std::nullopt;
}

std::string DescribeOptions(const MonitorOptions& options) {
  if (options.disabled) return "health checks disabled";
  std::string xids;
  if (options.xids_disabled) {
    xids = absl::StrCat("Xid checks disabled except Xids ",
                        JoinXids(options.enabled_xids));
  } else if (options.ignored_xids.empty()) {
    xids = "every Xid is fatal";
  } else {
    xids = absl::StrCat("ignoring Xids ", JoinXids(options.ignored_xids));
  }
  std::set<uint64_t> quiet;
  std::set<uint64_t> reset;
  for (const auto& [xid, recovery] : options.xid_recovery) {
    (recovery == XidRecovery::kReset ? reset : quiet).insert(xid);
  }
  std::string overrides;
  if (!quiet.empty()) {
    absl::StrAppend(&overrides, "; Xids ", JoinXids(quiet),
                    " recover without a reset");
  }
  if (!reset.empty()) {
    absl::StrAppend(&overrides, "; Xids ", JoinXids(reset), " need a reset");
  }
  return absl::StrCat(xids, "; double-bit ECC errors ",
                      options.dbe_unhealthy ? "fatal" : "ignored",
                      "; single-bit ECC errors logged only; recovery after ",
                      absl::FormatDuration(options.quiet_period), " quiet",
                      overrides);
}

}  // namespace gpulet::health
