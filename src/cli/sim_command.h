// `gpulet sim <cmd>`: fault injection into a running NVML simulator through
// its control socket (sim/control_protocol.h), and `gpulet sim
// render ROOT`, which writes the rest of the simulated node (device nodes,
// /proc, /sys, a driver root) from the machine the simulator loads
// (sim/node_render.h), and `gpulet sim kernel ROOT`, which plays
// the kernel's part on such a tree (sim/fake_kernel.h) until a
// signal. The CLI never links the simulator library;
// it sends one text line and prints the reply payload, or renders from the
// machine model.
//
// Thread safety: run on the main thread, one command per process.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "CLI/App.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpulet::cli {

struct SimOptions {
  std::string socket;  // --socket, GPULET_SIM_SOCKET
  int timeout_ms = 10000;
  std::string verb;  // the chosen sub-subcommand, set after parsing
  std::string gpu;   // index, GPU UUID or MIG UUID
  unsigned long long xid = 0;
  std::optional<unsigned> gpu_instance;
  std::optional<unsigned> compute_instance;
  unsigned code = 0;  // nvmlReturn_t for wait-error
  std::optional<unsigned> count;
  // render
  std::string root;
  std::string machine;  // --machine, GPULET_SIM_MACHINE; empty: dgx-h100
  std::string driver_dir = "driver";
  std::string dev_nodes = "mknod";  // mknod | files
  std::string sim_lib;              // installed as the driver's libnvidia-ml
  // kernel: where its uevents go (a unix datagram socket); empty: nowhere
  std::string uevent_socket;
};

// Registers `sim` and its sub-subcommands.
CLI::App* AddSimCommand(CLI::App& app, SimOptions& options);

// Records which sub-subcommand was given. Call after parsing.
void ResolveSimVerb(const CLI::App& sim, SimOptions& options);

// Problems the user must fix on the command line (exit code 2), e.g. no
// socket from either --socket or GPULET_SIM_SOCKET (every command but
// render talks to the simulator).
absl::Status ValidateSimOptions(const SimOptions& options);

// The request line for the simulator, without newline, e.g. "xid 0 79".
std::string SimControlLine(const SimOptions& options);

// render: renders the node and prints what it wrote. Otherwise sends the
// request and prints the reply payload (with a final newline).
absl::Status RunSim(const SimOptions& options, std::ostream& out);

}  // namespace gpulet::cli
