// KubeletGate: keeps the node agent's PodResources List calls out of the
// kubelet's device allocation.
//
// The kubelet's List handler first drops the pods that are no longer
// active from its device manager and, when it dropped one, recomputes the
// set of allocated devices from the devices it has recorded per container
// (UpdateAllocatedDevices). Devices it has chosen for a container but not
// recorded yet (from GetPreferredAllocation until just after Allocate
// answers) then look free, and nothing adds them back: the kubelet hands
// them to the next container as well. A List while a pod is deleted and
// another admitted gave two containers the same memory units (the
// memory-shares cluster scenario, seed 614799). So a List waits while the
// kubelet chooses (from the preferred-allocation call, for at most
// `choice_timeout` when no Allocate follows), while Allocate is answered,
// and for `grace` after the answer, the time the kubelet takes to record
// it; and a choice waits for a List in progress to end.
//
// Thread safety: a value; its owner locks it. Times come from the caller.
#pragma once

#include <cstdint>

#include "absl/time/time.h"

namespace gpulet::nodeagent {

class KubeletGate {
 public:
  KubeletGate(absl::Duration grace, absl::Duration choice_timeout)
      : grace_(grace), choice_timeout_(choice_timeout) {}

  // The kubelet asks for a preferred allocation: it is choosing units.
  // REQUIRES: !listing().
  void Choosing(absl::Time now) { chosen_at_ = now; }
  // Allocate is being answered. REQUIRES: !listing().
  void Answering() { ++answering_; }
  // The answer is going back to the kubelet.
  void Answered(absl::Time now) {
    --answering_;
    answered_at_ = now;
  }
  // How much longer a List must wait (zero: it may go now). While an
  // answer is in progress its end is unknown: `grace`, to look again.
  absl::Duration BusyFor(absl::Time now) const;

  void set_listing(bool listing) { listing_ = listing; }
  bool listing() const { return listing_; }

 private:
  const absl::Duration grace_;
  const absl::Duration choice_timeout_;
  absl::Time chosen_at_ = absl::InfinitePast();
  absl::Time answered_at_ = absl::InfinitePast();
  int64_t answering_ = 0;
  bool listing_ = false;
};

}  // namespace gpulet::nodeagent
