// PublisherReports: what MemoryPublisher tells the operator
// (docs/sharing.md#metrics): the metric families it updates (the units of
// each GPU sharing memory, syncs, placement writes, unreadable annotations)
// and the log line of an unreadable annotation, written once per distinct
// complaint.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "src/model/sharing/node_view.h"
#include "src/model/sharing/pack.h"
#include "src/plugin/memshares/publisher_metrics.h"

namespace gpulet::nodeagent {

class PublisherReports {
 public:
  explicit PublisherReports(PublisherMetrics metrics) : metrics_(metrics) {}

  // A sync ended, with `ok` as its result.
  void CountSync(bool ok);
  // A placement write ended: "ok", "error" or "timeout".
  void CountPlacementWrite(std::string_view result);
  // The node's annotation `annotation` ("pending" or "node") could not be
  // read: counted, and logged unless it is the same complaint as last time.
  void BadAnnotation(std::string_view annotation, const absl::Status& status);
  // Sets the units gauges of `node`'s GPUs, the `pending` requests packed
  // onto them, and removes those of GPUs no longer shared.
  void SetUnits(const sharing::NodeMemory& node,
                const std::vector<sharing::Request>& pending);

 private:
  const PublisherMetrics metrics_;

  absl::Mutex mu_;
  // The last complaint per annotation, so a bad value is logged once.
  std::map<std::string, std::string, std::less<>> bad_ ABSL_GUARDED_BY(mu_);
  // The GPUs whose gauges are set.
  std::vector<std::string> metric_gpus_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::nodeagent
