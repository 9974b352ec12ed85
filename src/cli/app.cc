#include "src/cli/app.h"

#include <exception>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "src/cli/cdi_command.h"
#include "src/cli/global_options.h"
#include "src/cli/inventory_commands.h"
#include "src/cli/dra_command.h"
#include "src/cli/extender_command.h"
#include "src/cli/labels_command.h"
#include "src/cli/plugin_command.h"
#include "src/cli/runtime_configure_command.h"
#include "src/cli/sim_command.h"
#include "src/cli/vfio_command.h"

#ifndef GPULET_VERSION
#define GPULET_VERSION "unknown"
#endif

namespace gpulet::cli {
namespace {

struct Commands {
  GlobalOptions global;
  InventoryOptions devices_options;
  InventoryOptions topo_options;
  SimOptions sim_options;
  CdiOptions cdi_options;
  PluginCommandOptions plugin_options;
  RuntimeConfigureOptions runtime_options;
  ExtenderCommandOptions extender_options;
  daemon::DraRunOptions dra_options;
  LabelsOptions labels_options;
  VfioOptions vfio_options;
  CLI::App* devices = nullptr;
  CLI::App* topo = nullptr;
  CLI::App* sim = nullptr;
  CLI::App* cdi = nullptr;
  CLI::App* plugin = nullptr;
  CLI::App* runtime = nullptr;
  CLI::App* extender = nullptr;
  CLI::App* dra = nullptr;
  CLI::App* labels = nullptr;
  CLI::App* vfio = nullptr;
  CLI::App* version = nullptr;
};

void Register(CLI::App& app, Commands& c) {
  AddGlobalOptions(app, c.global);
  c.devices = AddDevicesCommand(app, c.devices_options);
  c.topo = AddTopoCommand(app, c.topo_options);
  c.sim = AddSimCommand(app, c.sim_options);
  c.cdi = AddCdiCommand(app, c.cdi_options);
  c.plugin = AddPluginCommand(app, c.plugin_options);
  c.runtime = AddRuntimeCommand(app, c.runtime_options);
  c.extender = AddExtenderCommand(app, c.extender_options);
  c.dra = AddDraCommand(app, c.dra_options);
  c.labels = AddLabelsCommand(app, c.labels_options);
  c.vfio = AddVfioCommand(app, c.vfio_options);
  c.version = app.add_subcommand("version", "Print the gpulet version");
  app.require_subcommand(1);
}

int Fail(std::ostream& err, int code, const std::string& message) {
  err << "gpulet: " << message << "\n";
  return code;
}

// Help and --help-all print to `out` and succeed; anything else the parser
// rejects is a usage error.
int HandleParseError(CLI::App& app, const CLI::ParseError& e, std::ostream& out,
                     std::ostream& err) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    return app.exit(e, out, err);
  }
  return Fail(err, kExitUsage,
              std::string(e.what()) + " (run 'gpulet --help' for usage)");
}

absl::Status Dispatch(Commands& c, std::ostream& out) {
  if (c.devices->parsed()) return RunDevices(c.global, c.devices_options, out);
  if (c.topo->parsed()) return RunTopo(c.global, c.topo_options, out);
  if (c.sim->parsed()) return RunSim(c.sim_options, out);
  if (c.cdi->parsed()) return RunCdi(c.global, c.cdi_options, out);
  if (c.runtime->parsed()) return RunRuntimeConfigure(c.runtime_options, out);
  if (c.vfio->parsed()) return RunVfio(c.global, c.vfio_options, out);
  out << "gpulet " << GPULET_VERSION << "\n";
  return absl::OkStatus();
}

int RunParsed(Commands& c, std::ostream& out, std::ostream& err) {
  ApplyLogging(c.global);
  if (c.plugin->parsed()) return RunPlugin(c.global, c.plugin_options, err);
  if (c.extender->parsed()) {
    return RunExtenderCommand(c.extender_options, err);
  }
  if (c.dra->parsed()) return RunDraCommand(c.global, c.dra_options, err);
  if (c.labels->parsed()) {
    return RunLabels(c.global, c.labels_options, out, err);
  }
  if (c.sim->parsed()) {
    ResolveSimVerb(*c.sim, c.sim_options);
    absl::Status usage = ValidateSimOptions(c.sim_options);
    if (!usage.ok()) return Fail(err, kExitUsage, std::string(usage.message()));
  }
  absl::Status status = Dispatch(c, out);
  out.flush();
  if (!status.ok()) {
    return Fail(err, kExitRuntimeError, std::string(status.message()));
  }
  return kExitOk;
}

}  // namespace

int Run(int argc, const char* const* argv, std::ostream& out,
        std::ostream& err) {
  try {
    CLI::App app("gpulet: GPUs for Kubernetes", "gpulet");
    Commands commands;
    Register(app, commands);
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return HandleParseError(app, e, out, err);
    }
    return RunParsed(commands, out, err);
  } catch (const std::exception& e) {
    return Fail(err, kExitRuntimeError,
                std::string("internal error: ") + e.what());
  } catch (...) {
    return Fail(err, kExitRuntimeError, "internal error");
  }
}

}  // namespace gpulet::cli
