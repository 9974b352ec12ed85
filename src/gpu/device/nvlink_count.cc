#include "src/gpu/device/nvlink_count.h"

#include <algorithm>
#include <map>

namespace gpulet::device {
namespace {

// Links of one GPU per switch bus ID.
using SwitchLinks = std::map<std::string, unsigned>;

SwitchLinks LinksPerSwitch(const GpuLinks& gpu) {
  SwitchLinks result;
  for (const NvLinkEnd& link : gpu.links) {
    if (link.remote_type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
      ++result[link.remote_bus_id];
    }
  }
  return result;
}

unsigned DirectLinks(const GpuLinks& from, const GpuLinks& to) {
  return static_cast<unsigned>(std::count_if(
      from.links.begin(), from.links.end(), [&](const NvLinkEnd& link) {
        return link.remote_type == NVML_NVLINK_DEVICE_TYPE_GPU &&
               link.remote_bus_id == to.bus_id;
      }));
}

unsigned SwitchedLinks(const SwitchLinks& a, const SwitchLinks& b) {
  unsigned a_shared = 0;
  unsigned b_shared = 0;
  for (const auto& [bus_id, count] : a) {
    auto it = b.find(bus_id);
    if (it == b.end()) continue;
    a_shared += count;
    b_shared += it->second;
  }
  return std::min(a_shared, b_shared);
}

}  // namespace

const char* LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kDirect:
      return "direct";
    case LinkKind::kNvSwitch:
      return "nvswitch";
    case LinkKind::kNone:
      break;
  }
  return "none";
}

std::vector<std::vector<PairLinks>> CountNvLinks(
    const std::vector<GpuLinks>& gpus) {
  const size_t n = gpus.size();
  std::vector<SwitchLinks> switches;
  switches.reserve(n);
  for (const GpuLinks& gpu : gpus) switches.push_back(LinksPerSwitch(gpu));

  std::vector<std::vector<PairLinks>> result(n, std::vector<PairLinks>(n));
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      PairLinks links;
      links.direct = std::min(DirectLinks(gpus[a], gpus[b]),
                              DirectLinks(gpus[b], gpus[a]));
      links.switched = SwitchedLinks(switches[a], switches[b]);
      links.count = links.direct + links.switched;
      links.kind = links.switched > 0 ? LinkKind::kNvSwitch
                   : links.direct > 0 ? LinkKind::kDirect
                                      : LinkKind::kNone;
      result[a][b] = links;
      result[b][a] = links;
    }
  }
  return result;
}

}  // namespace gpulet::device
