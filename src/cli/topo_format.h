// Output of `gpulet topo`: a GPU-by-GPU matrix in the spirit of
// `nvidia-smi topo -m` (X on the diagonal, NV<n> for n NVLinks, else the PCIe
// common ancestor as PIX/PXB/PHB/NODE/SYS), CPU and NUMA affinity columns and
// a legend; or the full model as JSON. Pure formatting.
//
// JSON schema:
//   {"gpus": [{"index", "uuid", "busId", "numaNode" (int|null),
//              "cpuAffinity" "0-55,112-167" (Linux cpulist format)}],
//    "matrix": [["X", "NV18", ...], ...],
//    "pairs": [{"gpu1", "gpu2", "connection" "NV18", "level" "SYS",
//               "nvlinkKind" "none"|"direct"|"nvswitch", "nvlinkCount",
//               "directLinks", "switchedLinks",
//               "p2p": {"read", "write", "nvlink", "atomics"}}]}
// "pairs" lists every ordered pair of distinct GPUs (P2P is directional).
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include "src/gpu/device/topology.h"

namespace gpulet::cli {

// The matrix cell for GPUs a and b: "X", "NV<n>" or the level name.
std::string ConnectionName(const device::Topology& topology, size_t a,
                           size_t b);

std::string FormatTopoMatrix(const device::Topology& topology);

std::string FormatTopoJson(const device::Topology& topology);

}  // namespace gpulet::cli
