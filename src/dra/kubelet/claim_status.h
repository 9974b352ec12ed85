// What `gpulet dra` writes to a prepared claim's status.devices
// (resource.k8s.io/v1 AllocatedDeviceStatus, KEP-4817): one entry per
// device of this driver's allocation, keyed as the allocation result is
// (driver, pool, device, shareID, which the API server requires to match
// one), with the device's identity in `data`:
//   a GPU         {"uuid": "GPU-…"}
//   a MIG device  {"uuid": "MIG-…", "parentUUID": "GPU-…",
//                  "profile": "1g.5gb", "placement": {"start": 6, "size": 1}}
// Entries of other drivers and pools are never touched. The write is a JSON
// merge patch of the whole list (a list of a built-in type is replaced by a
// merge patch), made safe by metadata.uid and metadata.resourceVersion in
// the patch: a claim recreated under the same name or changed since it was
// read makes the server refuse it (409), and the writer reads it again.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "src/dra/kubelet/checkpoint.h"
#include "src/gpu/device/gpu.h"

namespace gpulet::dra {

// The entries for `devices` of `driver`, in their order. A device the node
// does not have (it went away) gets its UUID from the checkpoint only.
nlohmann::json DeviceStatusEntries(const std::string& driver,
                                   const device::Node& node,
                                   const std::vector<PreparedDevice>& devices);

// `claim`'s status.devices with the entries of `driver` in `pool` replaced
// by `ours` (empty: removed), the others kept in their order; nullopt when
// that is what the claim already holds (nothing to write).
std::optional<nlohmann::json> MergedDeviceStatus(const nlohmann::json& claim,
                                                 const std::string& driver,
                                                 const std::string& pool,
                                                 const nlohmann::json& ours);

// The merge patch writing `devices` to `claim`'s status: its uid and
// resourceVersion (the preconditions) and status.devices.
nlohmann::json DeviceStatusPatch(const nlohmann::json& claim,
                                 const nlohmann::json& devices);

}  // namespace gpulet::dra
