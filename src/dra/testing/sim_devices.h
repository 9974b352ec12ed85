// Test-only: the NodeDevices gpulet would publish for one of the
// simulator's machines, read the production way: the simulator loaded
// through DynamicLibrary, Discover and BuildTopology over it, and the PCIe
// roots from the machine's sysfs as `gpulet sim render` writes it into a
// temporary directory. Needs GPULET_SIM_LIB_DIR (sim_test_support.h).
//
// Not thread-safe; one test at a time, as gtest runs them.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "sim/node_render.h"
#include "sim/profiles.h"
#include "src/dra/slices/node_facts.h"
#include "src/dra/slices/slice_builder.h"
#include "src/gpu/device/discovery.h"
#include "src/gpu/device/topology.h"
#include "src/gpu/testing/sim_test_support.h"

namespace gpulet::draslice::testing {

inline absl::StatusOr<NodeDevices> SimNodeDevices(const std::string& machine) {
  ::setenv("GPULET_SIM_MACHINE", machine.c_str(), 1);
  nvml::LoadOptions load;
  load.library_path = nvml::simtest::SimLibrary();
  absl::StatusOr<nvml::LibraryPtr> lib = nvml::OpenLibrary(load);
  if (!lib.ok()) return lib.status();
  if (absl::Status s = (*lib)->Init(); !s.ok()) return s;
  absl::StatusOr<device::Node> node = device::Discover(**lib);
  if (!node.ok()) return node.status();
  absl::StatusOr<device::Topology> topology =
      device::BuildTopology(**lib, *node);
  if (!topology.ok()) return topology.status();
  (void)(*lib)->Shutdown();

  absl::StatusOr<sim::Machine> m = sim::LoadMachine(machine);
  if (!m.ok()) return m.status();
  nvml::simtest::TempDir root;
  sim::RenderOptions render;
  render.root = root.path();
  render.dev_nodes = sim::DevNodes::kFiles;
  if (absl::Status s = sim::RenderNode(*m, render); !s.ok()) return s;
  return CollectNodeDevices(*std::move(node), &*topology, root.path() + "/sys",
                            {});
}

}  // namespace gpulet::draslice::testing
