// Node labels: gpu-feature-discovery's (GFD's) label set computed from the
// discovered node and the configuration, as values, so that a node labelled
// by gpulet selects the same pods as one labelled by NVIDIA's GFD.
//
// What each label means and where its value comes from is in
// docs/labels.md. In short:
//   - node-wide: nvidia.com/cuda.driver.* / cuda.runtime.* (and the
//     driver-version.* / runtime-version.* spellings), nvidia.com/mig.capable,
//     nvidia.com/mps.capable, nvidia.com/gpu.mode, nvidia.com/gpu.machine,
//     nvidia.com/gpu.clique, nvidia.com/gfd.timestamp;
//   - per resource, as GFD names them: nvidia.com/gpu.* (product, count,
//     replicas, sharing-strategy, memory, family, compute.major/minor) and,
//     under migStrategy mixed, nvidia.com/mig-<profile>.* (product, count,
//     replicas, sharing-strategy, memory, multiprocessors, slices.gi/ci,
//     engines.*), plus nvidia.com/mig.strategy;
//   - the sharing rules: replicas from the time-slicing or MPS entry of the
//     resource, "-SHARED" after the product when it is shared and not
//     renamed (renameByDefault: false and no rename).
//
// Facts NVML does not give (the PCI class of each GPU, the machine type,
// the time) come in NodeFacts, read by the caller.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "src/base/config/config.h"
#include "src/gpu/device/gpu.h"

namespace gpulet::labels {

// Label key -> value, ordered by key.
using Labels = std::map<std::string, std::string>;

inline constexpr char kGpuPrefix[] = "nvidia.com/gpu";
inline constexpr char kMachineTypeUnknown[] = "unknown";

struct NodeFacts {
  // The machine's product name (GFD: the machine type file,
  // /sys/class/dmi/id/product_name); "unknown" when it cannot be read.
  std::string machine_type = kMachineTypeUnknown;
  // PCI class of each GPU by NVML index, as sysfs spells it ("0x030200");
  // GPUs missing here count as unknown.
  std::map<unsigned, std::string> pci_class;
  // Seconds since the epoch for nvidia.com/gfd.timestamp; unset: no
  // timestamp label.
  std::optional<int64_t> timestamp;
};

// GFD's label set for `node` under `config`. A node without GPUs gets only
// nvidia.com/gpu.machine and the timestamp.
Labels ComputeLabels(const device::Node& node, const config::Config& config,
                     const NodeFacts& facts);

// GFD's family of a CUDA compute capability: "kepler", "ampere", "hopper",
// "blackwell", ...; "undefined" for a major version it does not know.
std::string ArchFamily(int cc_major, int cc_minor);

// A label value made from free text as GFD makes it: spaces become '-';
// then, so that the API server accepts it, '+' becomes '.', any other
// character a label value may not hold becomes '-', and the value is cut
// to 63 characters and trimmed to start and end alphanumeric.
std::string LabelValue(const std::string& text);

}  // namespace gpulet::labels
