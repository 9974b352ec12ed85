#include "src/base/metrics/dra_metrics.h"

#include <iterator>
#include <string>
#include <vector>

#include "src/base/common/status_macros.h"
#include "src/base/metrics/gpulet_metrics.h"

namespace gpulet::metrics {
namespace {

std::vector<double> CallBuckets() {
  return {std::begin(kDraCallBuckets), std::end(kDraCallBuckets)};
}

// The counter's samples for `values` at 0, so they show from the start.
void Zero(Family* counter, const std::vector<std::string>& values) {
  for (const std::string& v : values) counter->Add({v}, 0);
}

}  // namespace

absl::StatusOr<DraMetrics> DraMetrics::Register(Registry& registry) {
  DraMetrics m;
  GPULET_ASSIGN_OR_RETURN(
      m.prepares,
      registry.AddCounter("gpulet_dra_prepares_total",
                          "Claims answered by NodePrepareResources, by "
                          "result (ok or error).",
                          {"result"}));
  GPULET_ASSIGN_OR_RETURN(
      m.unprepares,
      registry.AddCounter("gpulet_dra_unprepares_total",
                          "Claims answered by NodeUnprepareResources, by "
                          "result (ok or error).",
                          {"result"}));
  GPULET_ASSIGN_OR_RETURN(
      m.prepare_seconds,
      registry.AddHistogram("gpulet_dra_prepare_duration_seconds",
                            "Time to answer one NodePrepareResources call.", {},
                            CallBuckets()));
  GPULET_ASSIGN_OR_RETURN(
      m.unprepare_seconds,
      registry.AddHistogram("gpulet_dra_unprepare_duration_seconds",
                            "Time to answer one NodeUnprepareResources call.",
                            {}, CallBuckets()));
  GPULET_ASSIGN_OR_RETURN(
      m.devices,
      registry.AddGauge("gpulet_dra_devices",
                        "Devices of the node's pool as last published, by "
                        "state (healthy, tainted or withheld).",
                        {"state"}));
  GPULET_ASSIGN_OR_RETURN(
      m.slice_publishes,
      registry.AddCounter("gpulet_dra_slice_publishes_total",
                          "Attempts to bring the node's ResourceSlices up to "
                          "date, by result (ok or error).",
                          {"result"}));
  GPULET_ASSIGN_OR_RETURN(
      m.status_writes,
      registry.AddCounter("gpulet_dra_claim_status_writes_total",
                          "Writes of a claim's status.devices, by result (ok, "
                          "error or gone).",
                          {"result"}));
  for (Family* f : {m.prepares, m.unprepares, m.slice_publishes}) {
    Zero(f, {kResultOk, kResultError});
  }
  Zero(m.status_writes, {kResultOk, kResultError, kResultGone});
  return m;
}

}  // namespace gpulet::metrics
