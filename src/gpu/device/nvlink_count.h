// NVLink counting between GPU pairs, from the raw per-link facts NVML gives
// (which links are active and what PCI device sits at their remote end).
// Pure logic, table-tested; topology.cc feeds it from NVML.
//
// Definitions:
//  - Direct links: an active link of GPU a whose remote end is a GPU with
//    GPU b's bus ID. The pair's direct count is the smaller of what a and b
//    report (one physical link is seen from both ends; a one-sided report is
//    not trusted).
//  - NVSwitch: each switch is identified by the bus ID at the remote end of a
//    link of type SWITCH. Two GPUs are on the same fabric when they reach at
//    least one switch in common. Their switched link count is the smaller of
//    "links of a into the shared switches" and "links of b into the shared
//    switches" — on a DGX, where every GPU reaches every switch, that is the
//    minimum of the two GPUs' switch link counts (NV12 on DGX A100, NV18 on
//    DGX H100). GPUs on disjoint switch sets (separate islands) get none.
//  - Links of unknown remote type (neither GPU nor SWITCH) are ignored.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::device {

enum class LinkKind { kNone, kDirect, kNvSwitch };

// "none", "direct", "nvswitch".
const char* LinkKindName(LinkKind kind);

// One active NVLink as seen from its GPU.
struct NvLinkEnd {
  nvmlIntNvLinkDeviceType_t remote_type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
  std::string remote_bus_id;  // canonical (NvmlBusId) spelling

  bool operator==(const NvLinkEnd&) const = default;
};

struct GpuLinks {
  std::string bus_id;            // canonical spelling of the GPU itself
  std::vector<NvLinkEnd> links;  // active links only
};

struct PairLinks {
  LinkKind kind = LinkKind::kNone;  // kNvSwitch whenever switched > 0
  unsigned count = 0;               // direct + switched: the n of "NV<n>"
  unsigned direct = 0;
  unsigned switched = 0;

  bool operator==(const PairLinks&) const = default;
};

// result[a][b] for every pair; the diagonal is kNone with count 0.
std::vector<std::vector<PairLinks>> CountNvLinks(
    const std::vector<GpuLinks>& gpus);

}  // namespace gpulet::device
