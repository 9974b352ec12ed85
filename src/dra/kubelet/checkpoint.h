// The prepared-claims checkpoint: what `gpulet dra` answered for each claim
// it prepared, kept in one JSON file so that a restart of gpulet (or of the
// kubelet, which asks again) answers the same devices without preparing
// anything twice, and so that NodeUnprepareResources after a restart still
// knows what to undo.
//
// The file is replaced atomically (common::WriteFileAtomic, synced), so a
// crash leaves the old state or the new one. It carries a format version
// and a checksum of its claims; a file that fails either is an error naming
// the path, never silently an empty state.
//
// Thread safety: Checkpoint is not synchronised; the ClaimPreparer that
// owns it serialises access.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "src/dra/kubelet/claim_allocation.h"
#include "src/dra/kubelet/claim_config.h"

namespace gpulet::dra {

// One device as NodePrepareResources answers it.
struct PreparedDevice {
  std::vector<std::string> requests;
  std::string pool;
  std::string device;
  std::vector<std::string> cdi_device_ids;
  std::optional<std::string> share_id;
  // What the claim's spec was built from, so that a restart builds it
  // again with the running release's code: the UUID the device resolved
  // to, and a share's consumed memory in bytes. Empty and absent in
  // checkpoints of earlier releases.
  std::string uuid = "";
  std::optional<int64_t> consumed_memory = std::nullopt;
  // Allocated with adminAccess (monitoring beside the claim that uses the
  // device): never in the way of another claim, nor it in its way.
  bool admin_access = false;

  bool operator==(const PreparedDevice&) const = default;
};

struct PreparedClaim {
  ClaimRef ref;
  std::vector<PreparedDevice> devices;
  std::string cdi_spec_path;  // the claim's transient CDI spec file
  // The sharing applied (SharingApplier) and the UUIDs of its devices, so
  // that a restart applies it again; strategy "" when none.
  ClaimSharing sharing;
  std::vector<std::string> uuids;

  bool operator==(const PreparedClaim&) const = default;
};

// Claims by UID.
using PreparedClaims = std::map<std::string, PreparedClaim>;

// The file's text for `claims`, and back. Errors name `source` (a path) and
// the field.
std::string EncodeCheckpoint(const PreparedClaims& claims);
absl::StatusOr<PreparedClaims> DecodeCheckpoint(const std::string& text,
                                                const std::string& source);

// Reads the checkpoint at `path`; a missing file is an empty state.
absl::StatusOr<PreparedClaims> LoadCheckpoint(const std::string& path);

// Replaces the checkpoint at `path` atomically (mode 0600).
absl::Status SaveCheckpoint(const std::string& path,
                            const PreparedClaims& claims);

}  // namespace gpulet::dra
