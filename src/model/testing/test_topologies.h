// Test-only builders of device::Topology values: from a simulator machine
// (the same facts the simulator's NVML would report, counted with
// device::CountNvLinks) and seeded random shapes. Plus the test oracles:
// exhaustive best score, and a stand-in for NVIDIA's best-effort policy.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/machine.h"
#include "src/gpu/device/topology.h"
#include "src/model/allocation/score.h"

namespace gpulet::allocation::testing {

device::Topology FromMachine(const sim::Machine& machine);

// n GPUs: random common ancestors, some direct NVLinks, some GPUs on one of
// two NVSwitch fabrics, NUMA nodes 0/1 or none.
device::Topology RandomTopology(uint32_t seed, int n);

// Maximum SetScore over every `size`-subset of available containing must.
int64_t BruteForceBest(const ScoreMatrix& m, const std::vector<int>& available,
                       const std::vector<int>& must, int size);

// The set BestSet must return, by its documented order: maximum score, then
// best remainder pair (available minus the set), then lowest sorted set.
std::vector<int> BruteForceBestSet(const ScoreMatrix& m,
                                   const std::vector<int>& available,
                                   const std::vector<int>& must, int size);

// NVIDIA's pair score: level baseline + 100 per *direct* NVLink (switched
// pairs count as no NVLink), no NUMA term.
ScoreMatrix NvidiaMatrix(const device::Topology& topology);

// The reference baseline: the set NVIDIA's scoring prefers, found by
// exhaustive search (lowest indices on ties). NVIDIA's own policy picks a
// set from its best *partition* of the available GPUs, which can only score
// the same or lower under its own pair scores, so this is an optimistic
// stand-in for it.
std::vector<int> NvidiaBaseline(const device::Topology& topology,
                                const std::vector<int>& available,
                                const std::vector<int>& must, int size);

}  // namespace gpulet::allocation::testing
