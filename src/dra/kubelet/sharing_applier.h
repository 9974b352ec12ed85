// SharingApplier: the seam through which ClaimPreparer has a claim's
// sharing configuration (claim_config.h) take effect on the node: a GPU's
// time-slice, an MPS control daemon for the claim. `gpulet dra` implements
// it with the driver's tools (daemon::DraSharing); tests with a fake.
//
// Apply is called while the claim is prepared, before its CDI spec is
// written, and again for every checkpointed claim when gpulet starts (what
// it set up died with the previous process, or must be checked); it must
// be idempotent per claim. Release is called when the claim is unprepared,
// or when its preparation failed after Apply.
//
// Thread safety: ClaimPreparer calls it under its own lock, one call at a
// time.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/dra/kubelet/claim_config.h"
#include "src/model/cdi/spec.h"

namespace gpulet::dra {

// What the claim's CDI devices get so that its containers use the sharing:
// environment ("KEY=value") and mounts, the same for every device of the
// claim.
struct SharingEdits {
  std::vector<std::string> env;
  std::vector<cdi::Mount> mounts;

  bool operator==(const SharingEdits&) const = default;
};

class SharingApplier {
 public:
  virtual ~SharingApplier() = default;

  // Sets up `sharing` (strategy not empty) for claim `claim_uid` on the
  // devices `uuids` (GPU or MIG UUIDs, in the claim's order). The edits
  // must not depend on anything but the claim UID and `sharing`, so a
  // restart's Apply matches the spec written before. An error names the
  // claim's GPU or the tool that failed.
  virtual absl::StatusOr<SharingEdits> Apply(
      const std::string& claim_uid, const ClaimSharing& sharing,
      const std::vector<std::string>& uuids) = 0;

  // Undoes Apply for the claim; nothing to undo is a success.
  virtual absl::Status Release(const std::string& claim_uid) = 0;
};

}  // namespace gpulet::dra
