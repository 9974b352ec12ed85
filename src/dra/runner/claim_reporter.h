// ClaimReporter: what `gpulet dra` does after each NodePrepareResources and
// NodeUnprepareResources call (dra::ClaimObserver): counts each claim's
// answer and times the call (gpulet_dra_prepares_total,
// gpulet_dra_prepare_duration_seconds, and their unprepare pairs), and
// hands the devices of each claim the call prepared (with the claim as the
// preparer read it; a claim answered from the checkpoint is left alone) to
// the ClaimStatusWriter, and an unprepared claim's (none), which writes
// them to the API server later, on its own thread.
//
// Ownership: the metrics and the writer are borrowed (either may be null)
// and outlive the reporter. Thread safety: called from the DRA server's
// workers, concurrently; it keeps no state of its own.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/base/metrics/dra_metrics.h"
#include "src/dra/kubelet/claim_preparer.h"
#include "src/dra/runner/claim_status_writer.h"

namespace gpulet::daemon {

class ClaimReporter final : public dra::ClaimObserver {
 public:
  ClaimReporter(const metrics::DraMetrics* metrics, ClaimStatusWriter* status)
      : metrics_(metrics), status_(status) {}

  void Prepared(const std::vector<dra::ClaimRef>& claims,
                const std::map<std::string, dra::PrepareResult>& results,
                absl::Duration took) override;
  void Unprepared(const std::vector<dra::ClaimRef>& claims,
                  const std::map<std::string, absl::Status>& results,
                  absl::Duration took) override;

 private:
  const metrics::DraMetrics* const metrics_;
  ClaimStatusWriter* const status_;
};

}  // namespace gpulet::daemon
