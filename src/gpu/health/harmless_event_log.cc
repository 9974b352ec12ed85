#include "src/gpu/health/harmless_event_log.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "src/base/common/logging.h"

namespace gpulet::health {
namespace {

// Distinct harmless event kinds logged at INFO before falling back to
// verbosity 1, so a flood of odd Xid values cannot grow memory.
constexpr size_t kMaxLoggedKinds = 1024;

// Why an Xid that Decide() did not act on was ignored, for the log.
std::string WhyIgnored(const MonitorOptions& options, uint64_t xid) {
  if (options.xids_disabled) return "Xid checks are disabled";
  if (DefaultIgnoredXids().contains(xid)) {
    return "an application error, ignored by default";
  }
  return "listed in DP_DISABLE_HEALTHCHECKS or the config file's health "
         "section";
}

}  // namespace

void HarmlessEventLog::Log(const nvml::Event& event, int gpu,
                           const MonitorOptions& options) {
  const bool xid = (event.type & nvmlEventTypeXidCriticalError) != 0;
  const auto kind = std::make_tuple(gpu, event.type, xid ? event.data : 0);
  const bool first =
      logged_.size() < kMaxLoggedKinds && logged_.insert(kind).second;
  std::string message;
  if (xid) {
    message = absl::StrCat("Xid ", event.data);
    const std::string description = XidDescription(event.data);
    if (!description.empty()) absl::StrAppend(&message, " (", description, ")");
    absl::StrAppend(&message, " on GPU ", gpu,
                    " ignored: ", WhyIgnored(options, event.data));
  } else if ((event.type & nvmlEventTypeSingleBitEccError) != 0) {
    message = absl::StrCat("single-bit ECC error on GPU ", gpu,
                           ": corrected by the hardware, health unchanged");
  } else if ((event.type & nvmlEventTypeDoubleBitEccError) != 0) {
    message = absl::StrCat("double-bit ECC error on GPU ", gpu,
                           " ignored: health checks are disabled");
  } else {
    message = absl::StrCat("NVML event of type ", event.type, " on GPU ", gpu,
                           " ignored");
  }
  if (first) {
    GPULET_LOG(INFO) << message << " (further ones logged at -v=1)";
  } else {
    GPULET_VLOG(1) << message;
  }
}

}  // namespace gpulet::health
