// libFuzzer target for ParseMachine: no input may crash, hang or throw, and
// every machine the parser accepts must satisfy the invariants the NVML
// simulator relies on (checked here; a violation aborts the run).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/machine_parser.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckMachine(const gpulet::sim::Machine& m) {
  const size_t n = m.gpus.size();
  Check(m.topology.size() == n);
  for (size_t i = 0; i < n; ++i) {
    Check(m.topology[i].size() == n);
    Check(m.topology[i][i] == NVML_TOPOLOGY_INTERNAL);
    for (size_t j = 0; j < n; ++j) Check(m.topology[i][j] == m.topology[j][i]);
    const gpulet::sim::Gpu& g = m.gpus[i];
    Check(!g.uuid.empty() && !g.bus_id.empty() && !g.name.empty());
    Check(g.memory_total > 0 && g.memory_used <= g.memory_total);
    Check(g.nvlinks.size() <= NVML_NVLINK_MAX_LINKS);
    for (const gpulet::sim::NvLink& link : g.nvlinks) {
      Check(!link.remote_bus_id.empty());
      if (link.remote_type == NVML_NVLINK_DEVICE_TYPE_GPU) {
        Check(link.peer_gpu >= 0 && static_cast<size_t>(link.peer_gpu) < n &&
              static_cast<size_t>(link.peer_gpu) != i);
      }
    }
    Check(g.mig_devices.empty() || (g.mig_capable && g.mig_enabled));
    Check(g.mig_devices.size() <= g.max_mig_devices || g.mig_devices.empty());
    for (const gpulet::sim::MigDevice& d : g.mig_devices) {
      Check(d.gi_placement_size > 0 && d.ci_placement_size > 0);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gpulet::sim::Machine> machine =
      gpulet::sim::ParseMachine(text, "fuzz.yaml");
  if (machine.ok()) CheckMachine(*machine);
  return 0;
}
