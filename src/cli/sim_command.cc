#include "src/cli/sim_command.h"

#include "absl/strings/str_cat.h"
#include "src/nvml/sim/control_client.h"
#include "src/nvml/sim/node_render.h"
#include "src/nvml/sim/profiles.h"

namespace gpulet::cli {
namespace {

void AddGpuOption(CLI::App& cmd, SimOptions& options) {
  cmd.add_option("--gpu", options.gpu, "GPU index, GPU UUID or MIG UUID")
      ->required();
}

}  // namespace

CLI::App* AddSimCommand(CLI::App& app, SimOptions& options) {
  CLI::App* sim =
      app.add_subcommand("sim", "Inject faults into a running NVML simulator");
  sim->add_option("--socket", options.socket, "Control socket of the simulator")
      ->envname("GPULET_SIM_SOCKET");
  sim->add_option("--timeout-ms", options.timeout_ms,
                  "How long to wait for the reply")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sim->require_subcommand(1);

  CLI::App* xid = sim->add_subcommand("xid", "Raise an Xid event");
  AddGpuOption(*xid, options);
  xid->add_option("--xid", options.xid, "Xid number")->required();
  CLI::Option* gi =
      xid->add_option("--gi", options.gpu_instance, "GPU instance ID");
  CLI::Option* ci =
      xid->add_option("--ci", options.compute_instance, "Compute instance ID");
  gi->needs(ci);
  ci->needs(gi);

  AddGpuOption(*sim->add_subcommand("dbe", "Raise a double-bit ECC event"),
               options);
  AddGpuOption(*sim->add_subcommand("sbe", "Raise a single-bit ECC event"),
               options);
  AddGpuOption(*sim->add_subcommand("lose", "Make a GPU fall off the bus"),
               options);
  AddGpuOption(*sim->add_subcommand("restore", "Bring a lost GPU back"),
               options);

  CLI::App* wait_error = sim->add_subcommand(
      "wait-error", "Make the next nvmlEventSetWait calls fail");
  wait_error->add_option("--code", options.code, "nvmlReturn_t value")
      ->required()
      ->check(CLI::PositiveNumber);
  wait_error->add_option("--count", options.count, "How many calls fail")
      ->check(CLI::PositiveNumber);

  sim->add_subcommand("status", "Print the simulator's state as JSON");

  CLI::App* render = sim->add_subcommand(
      "render", "Write the simulated node's /dev, /proc, /sys and driver root");
  render->add_option("root", options.root, "Directory to render into")
      ->required();
  render
      ->add_option("--machine", options.machine,
                   "Built-in profile or machine file (default dgx-h100)")
      ->envname("GPULET_SIM_MACHINE");
  render
      ->add_option("--driver-dir", options.driver_dir,
                   "Driver root inside ROOT ('.' for ROOT itself)")
      ->capture_default_str();
  render
      ->add_option("--dev-nodes", options.dev_nodes,
                   "mknod: character devices (root only); files: empty files")
      ->check(CLI::IsMember({"mknod", "files"}))
      ->capture_default_str();
  render->add_option("--sim-lib", options.sim_lib,
                     "Simulator library to install as the driver's "
                     "libnvidia-ml.so.<version>");
  return sim;
}

void ResolveSimVerb(const CLI::App& sim, SimOptions& options) {
  for (const CLI::App* sub : sim.get_subcommands()) {
    options.verb = sub->get_name();
  }
}

absl::Status ValidateSimOptions(const SimOptions& options) {
  if (options.verb == "render") return absl::OkStatus();
  if (options.socket.empty()) {
    return absl::InvalidArgumentError(
        "sim: no simulator socket: pass --socket or set GPULET_SIM_SOCKET");
  }
  return absl::OkStatus();
}

std::string SimControlLine(const SimOptions& o) {
  if (o.verb == "xid") {
    std::string line = absl::StrCat("xid ", o.gpu, " ", o.xid);
    if (o.gpu_instance && o.compute_instance) {
      absl::StrAppend(&line, " ", *o.gpu_instance, " ", *o.compute_instance);
    }
    return line;
  }
  if (o.verb == "wait-error") {
    std::string line = absl::StrCat("wait-error ", o.code);
    if (o.count) absl::StrAppend(&line, " ", *o.count);
    return line;
  }
  if (o.verb == "status") return "status";
  return absl::StrCat(o.verb, " ", o.gpu);
}

absl::Status RunRender(const SimOptions& options, std::ostream& out) {
  absl::StatusOr<sim::Machine> machine = sim::LoadMachine(options.machine);
  if (!machine.ok()) return machine.status();
  sim::RenderOptions render;
  render.root = options.root;
  render.driver_dir = options.driver_dir;
  render.dev_nodes = options.dev_nodes == "files" ? sim::DevNodes::kFiles
                                                  : sim::DevNodes::kMknod;
  render.nvml_library = options.sim_lib;
  if (absl::Status s = sim::RenderNode(*machine, render); !s.ok()) return s;
  out << "rendered " << machine->source << " (" << machine->gpus.size()
      << " GPUs, driver " << machine->driver_version << ") under "
      << options.root << "; driver root "
      << (options.driver_dir == "." || options.driver_dir.empty()
              ? options.root
              : options.root + "/" + options.driver_dir)
      << "\n";
  return absl::OkStatus();
}

absl::Status RunSim(const SimOptions& options, std::ostream& out) {
  if (options.verb == "render") return RunRender(options, out);
  absl::StatusOr<std::string> reply = sim::SendControlCommand(
      options.socket, SimControlLine(options), options.timeout_ms);
  if (!reply.ok()) return reply.status();
  out << *reply;
  if (!reply->empty() && reply->back() != '\n') out << "\n";
  return absl::OkStatus();
}

}  // namespace gpulet::cli
