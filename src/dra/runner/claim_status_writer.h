// ClaimStatusWriter: keeps the status.devices entries of `gpulet dra`'s
// prepared claims true (dra/kubelet/claim_status.h), from a thread of its
// own, so that the kubelet's calls never wait for the API server: Set()
// only records what a claim's entries should be and returns.
//
// The thread writes each claim's latest wanted entries: the claim as the
// preparer read it (given to Set) or, without one and on every retry, a
// GET of the claim; when its entries of this driver and pool differ, a
// merge patch of
// status.devices on the status subresource with the claim's uid and
// resourceVersion as preconditions (the other drivers' entries kept). A
// claim that is gone (404, or another uid under its name) is forgotten; a
// write the server refuses as invalid (422: the claim was deallocated
// meanwhile) is logged and forgotten; anything else (a conflict, the API
// server unreachable, 403 while RBAC is being applied) is tried again after
// a backoff per claim (100 ms doubling to 30 s), until it works or a newer
// Set for the claim replaces it. Each outcome is counted in
// gpulet_dra_claim_status_writes_total.
//
// Ownership: the client and the metrics are borrowed and outlive the
// writer; its thread is joined by the destructor (writes in flight are
// stopped). Thread safety: Set and Pending from any thread.
#pragma once

#include <cstddef>
#include <map>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "src/base/common/backoff.h"
#include "src/base/metrics/dra_metrics.h"
#include "src/dra/kubelet/checkpoint.h"
#include "src/dra/kubelet/claim_allocation.h"
#include "src/gpu/device/gpu.h"
#include "src/net/kube/client.h"

namespace gpulet::daemon {

class ClaimStatusWriter {
 public:
  // `node` gives MIG devices' parent UUID and profile; `metrics` may be
  // null.
  ClaimStatusWriter(kube::Client& client, std::string driver, std::string pool,
                    device::Node node, const metrics::DraMetrics* metrics);
  ~ClaimStatusWriter();
  ClaimStatusWriter(const ClaimStatusWriter&) = delete;
  ClaimStatusWriter& operator=(const ClaimStatusWriter&) = delete;

  // `ref`'s entries should list `devices` (empty: none of ours). `read`:
  // the claim as just read from the API server, used instead of a GET for
  // the first write (null: none).
  void Set(const dra::ClaimRef& ref,
           const std::vector<dra::PreparedDevice>& devices,
           const nlohmann::json& read = nullptr);
  // Claims whose entries are not written yet.
  size_t Pending() const;

 private:
  struct Job {
    dra::ClaimRef ref;
    nlohmann::json entries;
    nlohmann::json read;  // the claim to write to first; null: GET it
    absl::Time not_before = absl::InfinitePast();
    common::Backoff backoff{{.initial = absl::Milliseconds(100),
                             .max = absl::Seconds(30),
                             .jitter = 0}};
    uint64_t version = 0;
  };
  enum class Outcome { kWritten, kGone, kRefused, kRetry };

  void Run(std::stop_token stop);
  // The job due first, or false when stopping.
  bool NextJob(Job& out);
  Outcome Write(const Job& job, std::stop_token stop);
  void Finish(const Job& job, Outcome outcome);

  kube::Client& client_;
  const std::string driver_;
  const std::string pool_;
  const device::Node node_;
  const metrics::DraMetrics* const metrics_;
  mutable absl::Mutex mu_;
  std::map<std::string, Job> jobs_ ABSL_GUARDED_BY(mu_);  // by claim UID
  uint64_t next_version_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::jthread thread_;  // last: starts after every member above exists
};

}  // namespace gpulet::daemon
