// Read-only questions about a sim::Machine that several export areas ask:
// profile lookup, MIG names and derived compute-instance figures, NVLink
// reachability between two GPUs.
//
// Pure functions over const data; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "sim/machine.h"
#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::sim {

const GpuInstanceProfile* FindGiProfile(const Gpu& gpu, unsigned id);
const ComputeInstanceProfile* FindCiProfile(const Gpu& gpu, unsigned id);

// The first MIG device of GPU instance `gi` (with compute instance `ci`, when
// given), or nullptr.
const MigDevice* FindMig(const Gpu& gpu, unsigned gi,
                         std::optional<unsigned> ci = std::nullopt);

// A compute instance profile as seen inside one GPU instance: NVML reports
// per-instance figures, so the count (and, for a CI as large as its GI, the
// SMs) follow from the GPU instance. nullopt when the profile does not fit.
struct CiProfileInGi {
  unsigned slice_count = 0;
  unsigned instance_count = 0;
  unsigned multiprocessor_count = 0;
  std::string name;  // "1g.10gb" or "1c.2g.20gb"
};
std::optional<CiProfileInGi> ComputeProfileIn(const GpuInstanceProfile& gi,
                                              const ComputeInstanceProfile& ci);

// "<GPU name> MIG <profile>", NVML's name for a MIG device.
std::string MigDeviceName(const Gpu& gpu, const MigDevice& mig);

// Whether GPUs a and b share an NVLink: directly, or through NVSwitches on
// one fabric (both have active links to a switch with the same bus ID).
bool ShareNvLink(const Machine& machine, int a, int b);

}  // namespace gpulet::sim
