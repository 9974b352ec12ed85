// ClaimPreparer: the state behind NodePrepareResources and
// NodeUnprepareResources, apart from gRPC.
//
// Prepare, for a claim not prepared yet: GET the ResourceClaim (through the
// ClaimGetter: the API server in `gpulet dra`, a fake in tests), check its
// UID, take the allocation results of our driver in the node's pool, map
// each device name to the current discovery, apply its sharing
// configuration (SharingApplier), write the claim's CDI spec (claim_cdi.h),
// then record the claim in the checkpoint (checkpoint.h) before answering. A
// claim already in the checkpoint is answered from it, without asking the API
// server: preparing is idempotent, and a restart of gpulet between the
// checkpoint and the answer (the kubelet asks again) prepares nothing twice.
// Unprepare removes the spec, releases the sharing and removes the checkpoint
// entry; a claim not prepared is a success. Create applies the sharing of every
// checkpointed claim again (a restarted gpulet's MPS daemons died with the
// previous process), and the first SetNode writes every checkpointed claim's
// spec again with the running release's code (an upgrade replaces what an
// earlier release wrote: its hooks, its MPS mounts), from the checkpoint, the
// node and the sharing applied again; a claim whose spec cannot be built again
// (its sharing failed, its device is gone) keeps the old one, logged.
//
// Every claim of a request gets its own answer: a bad claim (wrong UID,
// not allocated, a device this node does not have, a device prepared for
// another claim) fails alone with an error naming it; the kubelet asks
// again later. A device is prepared for one claim at a time, except one
// allocated with adminAccess and the shares of a device published for
// several allocations: the scheduler can allocate a device twice when an
// answer to its allocation write is lost (an API server restarting), and
// the second claim then waits until the first is unprepared. One checkpoint
// write covers a whole request.
//
// Crash order: the spec is written before the checkpoint and removed before
// it, so after any crash a checkpointed claim has its spec, and a spec
// without a checkpoint entry is an orphan that Create removes.
//
// Thread safety: all methods may be called from any thread; requests are
// serialised by one mutex, except the ClaimGetter's reads, made before it
// is taken.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "src/dra/kubelet/checkpoint.h"
#include "src/dra/kubelet/claim_allocation.h"
#include "src/dra/kubelet/claim_cdi.h"
#include "src/dra/kubelet/sharing_applier.h"
#include "src/gpu/device/gpu.h"
#include "src/model/cdi/spec.h"

namespace gpulet::dra {

// Reads a ResourceClaim's JSON, giving up when `stop` is requested; errors
// name the claim.
using ClaimGetter = std::function<absl::StatusOr<nlohmann::json>(
    const ClaimRef&, std::stop_token stop)>;

struct PrepareResult;

// Told of every Prepare and Unprepare once it is done (the metrics, the
// claims' status.devices): the claims asked for, each one's answer by UID,
// and how long the call took. Called on the caller's thread, with the
// preparer's lock released; must not block for long.
class ClaimObserver {
 public:
  virtual ~ClaimObserver() = default;
  virtual void Prepared(const std::vector<ClaimRef>& claims,
                        const std::map<std::string, PrepareResult>& results,
                        absl::Duration took) = 0;
  virtual void Unprepared(const std::vector<ClaimRef>& claims,
                          const std::map<std::string, absl::Status>& results,
                          absl::Duration took) = 0;
};

struct PreparerOptions {
  std::string driver;           // kDriverName
  std::string pool;             // the node name
  std::string checkpoint_path;  // ".../checkpoint.json"
  std::string cdi_dir;          // where claim specs go, "/var/run/cdi"
  // Applies claims' sharing configuration (time-slice, MPS daemon); not
  // owned, must outlive the preparer. Null: a claim whose configuration
  // asks for TimeSlicing or MPS fails, naming what is missing.
  SharingApplier* sharing = nullptr;
  // Told of each Prepare and Unprepare; not owned, may be null.
  ClaimObserver* observer = nullptr;
  // Test seam: called after the checkpoint of a Prepare was written and
  // before the answer is returned (a crash there must not double-prepare).
  std::function<void()> after_checkpoint = {};
};

// One claim's answer: its devices, or why not.
struct PrepareResult {
  std::vector<PreparedDevice> devices;
  absl::Status status;
  // The ResourceClaim as read from the API server when this call prepared
  // it; null when answered from the checkpoint or failed.
  nlohmann::json claim = nullptr;
};

class ClaimPreparer {
 public:
  // Loads the checkpoint (an unreadable or corrupt one is an error naming
  // the path), removes claim specs in cdi_dir that it does not list, and
  // applies the sharing of the claims it lists (a failure is logged: the
  // claim stays prepared).
  static absl::StatusOr<std::unique_ptr<ClaimPreparer>> Create(
      PreparerOptions options, ClaimGetter get_claim);

  // The discovered node and its CDI spec (cdi::BuildSpec), which device
  // names resolve against. Until set, new claims fail with Unavailable.
  // The first call rewrites the checkpointed claims' specs (above).
  void SetNode(device::Node node, cdi::Spec node_spec);

  // Answers keyed by claim UID, one per distinct UID in `claims`. The
  // claims not prepared yet are read first, without the lock (a read that
  // hangs holds no other request up), until `stop`: a claim not read when
  // it is requested is DeadlineExceeded, naming it.
  std::map<std::string, PrepareResult> Prepare(
      const std::vector<ClaimRef>& claims, std::stop_token stop = {});
  std::map<std::string, absl::Status> Unprepare(
      const std::vector<ClaimRef>& claims);

  // The checkpointed claims.
  PreparedClaims Prepared() const;

 private:
  ClaimPreparer(PreparerOptions options, ClaimGetter get_claim,
                PreparedClaims prepared,
                std::map<std::string, SharingEdits> reapplied);
  std::map<std::string, PrepareResult> PrepareClaims(
      const std::vector<ClaimRef>& claims, std::stop_token stop);
  std::map<std::string, absl::Status> UnprepareClaims(
      const std::vector<ClaimRef>& claims);
  absl::StatusOr<PreparedClaim> PrepareNew(const ClaimRef& ref,
                                           const nlohmann::json& object)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The claims of `claims` not prepared yet, read through the getter.
  std::map<std::string, absl::StatusOr<nlohmann::json>> ReadNew(
      const std::vector<ClaimRef>& claims, std::stop_token stop)
      ABSL_LOCKS_EXCLUDED(mu_);
  // FailedPrecondition naming both claims when a device of `allocated` is
  // prepared for another claim: the scheduler gave it twice (a lost answer
  // to its allocation write, an API server restarted under it). Devices
  // allocated with adminAccess, and two shares of one device, pass.
  absl::Status CheckNotPrepared(
      const ClaimRef& ref, const std::vector<AllocatedDevice>& allocated) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Each allocated device found in the discovery: its CDI device (with a
  // memory share's limit) and, in `claim`, its answer.
  absl::StatusOr<std::vector<ClaimDevice>> ResolveDevices(
      const ClaimRef& ref, const std::vector<AllocatedDevice>& allocated,
      PreparedClaim& claim) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The claim's sharing set up through options_.sharing (recorded in
  // `claim`), and what its CDI devices get for it (`devices`: the MPS
  // memory limit of a share).
  absl::StatusOr<SharingEdits> ApplySharing(
      const ClaimRef& ref, const ClaimSharing& sharing,
      const std::vector<AllocatedDevice>& allocated,
      std::vector<ClaimDevice>& devices, PreparedClaim& claim)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseSharing(const PreparedClaim& claim)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A memory share's environment (the limit in MiB); none without one.
  static std::vector<std::string> ShareEnv(
      std::optional<int64_t> consumed_memory);
  // MPS's pinned-memory limit for a claim of one shared device.
  static void AddMpsLimit(const ClaimSharing& sharing,
                          std::optional<int64_t> only_memory,
                          std::vector<ClaimDevice>& devices);
  // At start (claim_respec.cc): every checkpointed claim's spec written
  // again; a claim that fails keeps its old spec, logged.
  void RewriteSpecs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RewriteSpec(const PreparedClaim& claim)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteSpec(const ClaimRef& ref,
                         const std::vector<ClaimDevice>& devices,
                         const SharingEdits& edits, const PreparedClaim& claim)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PreparerOptions options_;
  const ClaimGetter get_claim_;
  mutable absl::Mutex mu_;
  PreparedClaims prepared_ ABSL_GUARDED_BY(mu_);
  // What Create's Apply gave each checkpointed claim with sharing.
  const std::map<std::string, SharingEdits> reapplied_;
  bool have_node_ ABSL_GUARDED_BY(mu_) = false;
  device::Node node_ ABSL_GUARDED_BY(mu_);
  cdi::Spec node_spec_ ABSL_GUARDED_BY(mu_);
};

// Claim UIDs end up in file names: letters, digits and '-', 1 to 64 of
// them. InvalidArgument naming the claim otherwise.
absl::Status CheckClaimUid(const ClaimRef& ref);

}  // namespace gpulet::dra
