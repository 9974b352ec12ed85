// XID policy: which NVML events make a GPU unhealthy, and the environment
// knobs that change it, with NVIDIA k8s-device-plugin's semantics
// (docs/health.md):
//
//   DP_DISABLE_HEALTHCHECKS  "all" | "xids" | list of extra Xids to ignore
//   DP_ENABLE_HEALTHCHECKS   "all" | list of Xids to act on regardless
//
// An Xid critical error makes its GPU (or MIG device) unhealthy unless the
// Xid is ignored; NVIDIA ignores Xids 13, 31, 43, 45, 68 and 109 by default,
// as they are raised by faulty applications, not by faulty GPUs. A
// double-bit ECC event is fatal too (NVIDIA registers for it but ignores it;
// the driver reports the same fault as Xid 48, which NVIDIA acts on). A
// single-bit ECC event is corrected by the hardware and only logged.
//
// Pure: values in, values out; no NVML calls, no environment reads.
// Thread safety: as for plain values and free functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/base/common/clock.h"
#include "src/base/metrics/gpulet_metrics.h"
#include "src/gpu/nvml/library.h"
#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::health {

// The events the monitor registers for, intersected with what each GPU
// supports (nvmlDeviceGetSupportedEventTypes), as NVIDIA does.
inline constexpr uint64_t kHealthEventMask = nvmlEventTypeXidCriticalError |
                                             nvmlEventTypeDoubleBitEccError |
                                             nvmlEventTypeSingleBitEccError;

// NVML's "not scoped to a MIG device" value for gpuInstanceId and
// computeInstanceId.
inline constexpr uint32_t kNoInstance = 0xFFFFFFFF;

// Xid 79: the GPU has fallen off the bus (it is lost).
inline constexpr uint64_t kXidFallenOffTheBus = 79;

// Why a HealthEvent was sent; also the `reason` label of the
// gpulet_health_transitions_total metric (CauseLabel).
enum class HealthCause {
  kXid,              // a fatal Xid (xid set)
  kDoubleBitEcc,     // a double-bit ECC event
  kWatchFailed,      // the GPU could not be registered for events
  kDiscoveryFailed,  // a query of the GPU failed during discovery
  kLost,             // a probe found the GPU lost while events went unread
  kRecoveredQuiet,   // healthy again after the quiet period
  kRecoveredReset,   // healthy again after a reset and the quiet period
};

// "xid", "double_bit_ecc", "watch_failed", "discovery_failed", "lost",
// "quiet_period", "reset".
const char* CauseLabel(HealthCause cause);

// One health decision about one GPU, or one MIG device of it.
struct HealthEvent {
  int gpu_index = -1;  // NVML index of the (parent) GPU
  // Set when NVML attributed the event to one GPU instance / compute
  // instance of the GPU (MIG); unset means the whole GPU.
  std::optional<unsigned> gpu_instance_id;
  std::optional<unsigned> compute_instance_id;
  // True when the GPU recovered (recovery_policy.h); the event then names
  // the whole GPU (no instance ids) and xid is 0.
  bool healthy = false;
  uint64_t xid = 0;    // 0 when the event was not an Xid
  std::string reason;  // "Xid 79 (GPU has fallen off the bus)", ...
  HealthCause cause = HealthCause::kXid;

  bool operator==(const HealthEvent&) const = default;
};

// Whether an unhealthy `event` is its GPU's loss: Xid 79, or a probe that
// found the GPU lost. False for a recovery.
bool IsGpuLoss(const HealthEvent& event);

// How a fatal Xid recovers (the config file's health.xids actions
// "unhealthy" and "reset").
enum class XidRecovery {
  kQuietPeriod,  // after the quiet period
  kReset,        // after the GPU was lost and is back, then the quiet period
};

struct MonitorOptions {
  // Nothing is monitored: HealthMonitor::Start registers no event and starts
  // no thread. Set by DP_DISABLE_HEALTHCHECKS=all without any Xid
  // re-enabled by DP_ENABLE_HEALTHCHECKS.
  bool disabled = false;
  // Every Xid is ignored except those in `enabled_xids`
  // (DP_DISABLE_HEALTHCHECKS=xids or all).
  bool xids_disabled = false;
  // Ignored Xids when !xids_disabled: NVIDIA's defaults, plus the Xids listed
  // in DP_DISABLE_HEALTHCHECKS, minus `enabled_xids`.
  std::set<uint64_t> ignored_xids = {13, 31, 43, 45, 68, 109};
  // Xids always acted on (DP_ENABLE_HEALTHCHECKS), overriding both of the
  // above.
  std::set<uint64_t> enabled_xids;
  // A double-bit ECC event makes the GPU unhealthy. Off only with
  // DP_DISABLE_HEALTHCHECKS=all (or health.disabled).
  bool dbe_unhealthy = true;
  // Per-Xid recovery from the config file, overriding ResetXids()
  // (recovery_policy.h) for these Xids. Does not make an ignored Xid fatal.
  std::map<uint64_t, XidRecovery> xid_recovery;
  // An unhealthy GPU recovers after this long without a fatal event or a
  // failed probe (recovery_policy.h); GPULET_HEALTH_QUIET_PERIOD.
  absl::Duration quiet_period = absl::Minutes(5);
  // The time source for the quiet period; nullptr means the real clock.
  // Borrowed: must outlive the monitor.
  const common::Clock* clock = nullptr;
  // Where the monitor counts Xids (gpulet_xid_events_total, every Xid of a
  // watched GPU, ignored ones included) and health transitions, and keeps
  // gpulet_gpu_healthy per GPU UUID; nullptr: no metrics. Borrowed: the
  // registry behind it must outlive the monitor.
  const metrics::GpuletMetrics* metrics = nullptr;

  bool operator==(const MonitorOptions&) const = default;
};

// NVIDIA's default ignored Xids (application errors).
const std::set<uint64_t>& DefaultIgnoredXids();

// Builds the options from the two variables' values; nullptr or "" means
// unset. Tokens are separated by commas and/or whitespace, case-insensitive.
// Unlike NVIDIA's plugin, which logs and skips a malformed token, a token
// that is not "all", "xids" or a positive decimal Xid is an InvalidArgument
// error naming the variable and the token, e.g.
//   DP_DISABLE_HEALTHCHECKS: "4x" is not an Xid (a positive decimal number),
//   "all" or "xids"
// DP_ENABLE_HEALTHCHECKS=all turns every check on, whatever
// DP_DISABLE_HEALTHCHECKS says (NVIDIA's precedence).
absl::StatusOr<MonitorOptions> ParseHealthEnv(const char* disable,
                                              const char* enable);

// The two variables applied on top of `base` (options from the config file,
// health_config.h) with the same rules as ParseHealthEnv: listed Xids are
// ignored / acted on whatever `base` says, "xids" and "all" disable, and
// DP_ENABLE_HEALTHCHECKS=all turns every check on. `base`'s quiet period,
// clock, metrics and per-Xid recovery are kept.
// ParseHealthEnv(d, e) == ApplyHealthEnv(MonitorOptions{}, d, e).
absl::StatusOr<MonitorOptions> ApplyHealthEnv(MonitorOptions base,
                                              const char* disable,
                                              const char* enable);

// The quiet period from GPULET_HEALTH_QUIET_PERIOD's value (nullptr or ""
// means unset: `fallback`): a Go-style duration such as "30s", "5m",
// "1h30m" or "0". A malformed, negative or infinite value is an
// InvalidArgument error naming the variable and the value.
absl::StatusOr<absl::Duration> ParseQuietPeriod(
    const char* value, absl::Duration fallback = absl::Minutes(5));

// True when an Xid critical error with this Xid does not change health.
bool IsXidIgnored(const MonitorOptions& options, uint64_t xid);

// The meaning of a well-known Xid from NVIDIA's Xid catalog ("GPU has fallen
// off the bus"), or "" for others.
std::string XidDescription(uint64_t xid);

// The decision for one NVML event on the GPU with NVML index `gpu_index`:
// an unhealthy HealthEvent, or nullopt when the event changes nothing
// (ignored Xid, single-bit ECC, other event types, monitoring disabled).
std::optional<HealthEvent> Decide(const nvml::Event& event, int gpu_index,
                                  const MonitorOptions& options);

// One line for the startup log: what is acted on and what is ignored.
std::string DescribeOptions(const MonitorOptions& options);

}  // namespace gpulet::health
