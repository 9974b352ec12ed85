// MemoryPublisher: the node side of memory shares (docs/sharing.md). It
// keeps the Node annotation gpulet.dev/gpu-memory true to the node's real
// allocation, prunes gpulet.dev/gpu-memory-pending, and tells the plugin's
// preferred allocation which requests are pending.
//
// A sync reads the kubelet's PodResources (List, GetAllocatableResources),
// adds the plugin's own Allocate answers the kubelet does not list yet,
// reads the Node, drops the pending entries whose pod was admitted, is
// gone or timed out, and writes both annotations in one JSON merge patch
// that carries the Node's resourceVersion: a concurrent writer (the
// scheduler extender) makes the API server answer 409 Conflict, and the
// sync reads again and retries. Syncs run after every Allocate, on every
// change of the node's pods (a watch), and every resync period; nothing
// wakes the thread otherwise.
//
// Reserve closes the window between preferred allocation's read of the
// pending requests and the Allocate answer: the choice is written to the
// Node with the resourceVersion of that read, so a pod the extender bound
// in between (which counted this container as pending anywhere it fits)
// makes the write fail and the choice is made again with that pod.
//
// OnAllocate closes the window between an Allocate answer and the next
// sync: before the plugin answers, a writer thread writes
// gpulet.dev/gpu-memory from the last PodResources listing with the answer
// as a placement (GPU, units, unit IDs, time) counted in its GPU's `used`,
// in a read-modify-write with the resourceVersion (the pending annotation
// is left to the syncs). No List is made while the kubelet allocates
// (KubeletGate): a sync waits. The listings and the answers are merged by
// unit ID (sharing::AllocationLedger), so no unit is counted twice: not
// when a listing already shows the container being answered, not when a
// restarted kubelet allocates a listed container again, not when the
// kubelet hands out units of pods deleted while it was down. A sync
// replaces the placement by the container's attributed entry once
// PodResources lists its units, in the same patch that prunes the pending
// annotation; a placement never listed leaves at the first listing after
// it that lists every pod of the node asking for the resource (by the
// watch of the node's pods: its pod went away first), and at the latest
// after pending_timeout.
// When the write fails, or is not done within placement_timeout or before
// the caller's stop token (its call's deadline) is requested, OnAllocate
// takes the answer back from the ledger and returns an error naming the
// node and what it waited for: the Allocate fails rather than leave the
// extender a Node that does not show it. Written or not, it is counted in
// gpulet_memory_placement_writes_total{result}. The callers run on the
// plugin server's workers, never on its loop (docs/plugin.md).
//
// An annotation edited by hand into something unreadable is ignored with
// a logged reason and a count in gpulet_memory_annotation_errors_total,
// never a crash: a bad pending annotation is left alone (the plugin then
// sees no pending requests), a bad node annotation is overwritten.
//
// Thread safety: every public method may be called from any thread. The
// client objects are borrowed and must outlive the publisher.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/base/metrics/registry.h"
#include "src/model/sharing/node_view.h"
#include "src/net/kube/client.h"
#include "src/net/podresources/client.h"
#include "src/plugin/memshares/kubelet_gate.h"
#include "src/plugin/memshares/pod_watch.h"
#include "src/plugin/memshares/publisher_metrics.h"
#include "src/plugin/memshares/publisher_reports.h"

namespace gpulet::nodeagent {

struct PublisherOptions {
  std::string node_name;
  std::string resource_name = "nvidia.com/gpu-memory";
  int64_t unit_mib = 1024;
  absl::Duration pending_timeout = absl::Minutes(5);
  absl::Duration resync_period = absl::Minutes(5);
  // Read-modify-write attempts of one sync while the Node keeps changing.
  int max_attempts = 5;
  // How long OnAllocate waits for its placement to be written.
  absl::Duration placement_timeout = absl::Seconds(5);
  // How long after answering an Allocate no PodResources List is made:
  // the kubelet records the answer's units just after (KubeletGate).
  absl::Duration kubelet_grace = absl::Seconds(1);
  // Its WallNow() stamps and ages the annotations' entries (wall time: they
  // are compared across machines). Borrowed; must outlive the publisher.
  const common::Clock* clock = &common::RealClock::Get();
};

class MemoryPublisher {
 public:
  MemoryPublisher(kube::Client& api, const podresources::Client& kubelet,
                  PublisherOptions options, PublisherMetrics metrics = {});
  // Stops the threads started by Start.
  ~MemoryPublisher();

  MemoryPublisher(const MemoryPublisher&) = delete;
  MemoryPublisher& operator=(const MemoryPublisher&) = delete;

  // The GPUs sharing memory: UUID, index, units and health (`used` is
  // ignored). Wakes the sync thread.
  void SetGpus(std::vector<sharing::GpuSpace> gpus);
  // The plugin is answering an Allocate with the unit IDs `ids` (`units`
  // of them; otherwise it is logged and ignored) of `gpu`: records the
  // placement on the Node (see above), waiting at most placement_timeout
  // or until `stop`, and wakes the sync thread. DeadlineExceeded (not
  // written in time) or Unavailable (the write failed) naming the node;
  // a placement that cannot be written before the first PodResources
  // listing is left to the sync (OK). Needs Start() for the write;
  // without it, only the sync thread learns of it (OK).
  absl::Status OnAllocate(const std::string& gpu, int64_t units,
                          const std::vector<std::string>& ids,
                          std::stop_token stop = {});
  // The requests preferred allocation must keep fitting; `refresh` reads
  // the Node first (the pending annotation may be newer than the last
  // sync), sets `node_version` (when not null) to the resourceVersion read,
  // and means the kubelet is choosing units: no List is made until it has
  // recorded them (KubeletGate), and a List in progress ends first. A read
  // that fails or is stopped (`stop`) is an error naming the node
  // (Unavailable, DeadlineExceeded when stopped): no answer from an old
  // copy.
  absl::StatusOr<std::vector<sharing::Request>> Pending(
      bool refresh, std::string* node_version = nullptr,
      std::stop_token stop = {});
  // Preferred allocation chose `ids` (`units` of them) of GPU `gpu`
  // against the requests Pending(true)
  // returned with `node_version`: writes gpulet.dev/gpu-memory with it as a
  // placement, in a merge patch carrying `node_version`, and counts it like
  // an Allocate answer from then on. Aborted when the Node changed since
  // that read (409 Conflict: the extender may have bound a pod that the
  // choice did not see; choose again): nothing is recorded. Another error
  // (API server unreachable, no listing yet, no version) records the
  // choice in the node agent only; the caller answers anyway.
  absl::Status Reserve(const std::string& gpu, int64_t units,
                       const std::vector<std::string>& ids,
                       const std::string& node_version,
                       std::stop_token stop = {});

  // One sync, on the caller's thread.
  absl::Status Sync(std::stop_token stop = {});
  // Writes the Node annotation with `placed` (see above), on the caller's
  // thread: no-op when the annotation has it already or the ledger no
  // longer does; FailedPrecondition before any PodResources listing.
  absl::Status WritePlacement(const sharing::Placement& placed,
                              std::stop_token stop = {});

  // Starts the sync thread and the watch of the node's pods.
  // REQUIRES: called once.
  void Start(const common::Clock& clock);
  void Wake();
  // Successful syncs so far.
  int64_t syncs() const;

 private:
  // Reads PodResources (List, GetAllocatableResources) into the ledger,
  // once the kubelet is not allocating (KubeletGate).
  absl::Status ReadListing(std::stop_token stop);
  // One read of the Node and one patch at its version. `looked_up` holds
  // the fates of pending pods asked in earlier attempts of the same sync:
  // each is one GET, made between the read and the patch, and a hundred of
  // them (pods pending while the API server was away) would keep the
  // Node's version old for seconds and the patch conflicting every time.
  absl::Status SyncOnce(std::stop_token stop, bool* conflict,
                        std::map<std::string, sharing::PodFate>* looked_up);
  // The annotation as the node agent knows the node now: the last listing
  // and the ledger's answers (AllocationLedger: no unit counted twice).
  sharing::NodeMemory Known() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WritePlacementOnce(const sharing::Placement& placed,
                                  std::stop_token stop, bool* conflict);
  // A merge patch of the Node's `annotations`, valid only at
  // `resource_version` (409 Conflict comes back as Aborted).
  absl::Status PatchAnnotations(const std::string& resource_version,
                                nlohmann::json annotations,
                                std::stop_token stop);
  void WriterLoop(std::stop_token stop);
  // OnAllocate's answer from the write's `result` (none: not in time).
  absl::Status Written(const sharing::Placement& placed,
                       const std::optional<absl::Status>& result,
                       std::stop_token stop) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  sharing::PodFate Fate(const sharing::PendingPod& pod, std::stop_token stop);
  // Fate, asked once per pod and sync; a pod gone (deleted, replaced,
  // terminal, bound elsewhere: final for its uid) is remembered in gone_
  // until it leaves the pending annotation.
  sharing::PodFate FateOnce(const sharing::PendingPod& pod,
                            std::stop_token stop,
                            std::map<std::string, sharing::PodFate>* looked_up);
  void Loop(std::stop_token stop);

  kube::Client& api_;
  const podresources::Client& kubelet_;
  const PublisherOptions options_;
  PublisherReports reports_;

  mutable absl::Mutex mu_;
  std::vector<sharing::GpuSpace> gpus_ ABSL_GUARDED_BY(mu_);
  sharing::AllocationLedger ledger_ ABSL_GUARDED_BY(mu_);
  KubeletGate gate_ ABSL_GUARDED_BY(mu_);
  sharing::Pending pending_ ABSL_GUARDED_BY(mu_);  // as last read, pruned
  // Uids of pending pods found gone since the last successful patch (which
  // dropped every such entry from the pending annotation).
  std::set<std::string> gone_ ABSL_GUARDED_BY(mu_);
  sharing::NodeMemory node_ ABSL_GUARDED_BY(mu_);  // as last written
  // The GPUs as of the last listing (the kubelet's count of units), and
  // when it was read. Pending() and the placement writes use Known(), the
  // last listing whether written or not: with node_, a container the
  // ledger no longer counts (it is listed) would count as pending again
  // until the write succeeds.
  std::vector<sharing::GpuSpace> listed_gpus_ ABSL_GUARDED_BY(mu_);
  absl::Time listed_at_ ABSL_GUARDED_BY(mu_);
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  int64_t syncs_ ABSL_GUARDED_BY(mu_) = 0;
  // The writer thread's placements: those to write with their number, how
  // many were queued, the results an OnAllocate still waits for (by
  // number; empty until written), and whether it was started.
  struct WriteQueue {
    std::vector<std::pair<int64_t, sharing::Placement>> to_write;
    int64_t queued = 0;
    std::map<int64_t, std::optional<absl::Status>> waiting;
    bool running = false;
  };
  WriteQueue writes_ ABSL_GUARDED_BY(mu_);

  // Last members: stopped and joined first on destruction. The pods'
  // uids (PodResources has none) and a wake-up on every change of them.
  PodWatch pod_watch_;
  std::jthread loop_;
  std::jthread writer_;
};

}  // namespace gpulet::nodeagent
