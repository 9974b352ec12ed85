#include "src/cli/app.h"

#include <exception>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "src/cli/cdi_command.h"
#include "src/cli/dra_command.h"
#include "src/cli/dra_webhook_command.h"
#include "src/cli/extender_command.h"
#include "src/cli/global_options.h"
#include "src/cli/inventory_commands.h"
#include "src/cli/labels_command.h"
#include "src/cli/nearest_name.h"
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
  DraWebhookCommandOptions dra_webhook_options;
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
  CLI::App* dra_webhook = nullptr;
  CLI::App* labels = nullptr;
  CLI::App* vfio = nullptr;
  CLI::App* version = nullptr;
};

// Every subcommand's name, built or not (see Wanted): the candidates of a
// mistyped one.
const std::vector<std::string>& CommandNames() {
  static const std::vector<std::string>* const kNames =
      new std::vector<std::string>{"devices", "topo",    "sim",      "cdi",
                                   "plugin",  "runtime", "extender", "dra",
                                   "labels",  "vfio",    "version"};
  return *kNames;
}

// Which subcommands to build. Building every subcommand's options (CLI11
// objects, validators, environment names) took about half a millisecond of
// each start; a run needs only the subcommand it names. So a subcommand is
// built when its name is one of the arguments (a global option's value that
// happens to equal a name only builds one more), and all of them when help
// may be asked for, so that help and usage errors read as before.
// Subcommands not built are not known to the parser: a word naming none is
// reported by UnknownCommand, which knows every name.
class Wanted {
 public:
  Wanted(int argc, const char* const* argv) {
    for (int i = 1; i < argc; ++i) {
      std::string_view arg = argv[i];
      if (arg == "--help" || arg == "--help-all" ||
          (arg.size() > 1 && arg[0] == '-' && arg[1] != '-' &&
           arg.find('h') != std::string_view::npos)) {
        all_ = true;
      }
      args_.emplace(arg);
    }
  }
  bool operator()(std::string_view name) const {
    return all_ || args_.contains(name);
  }

 private:
  bool all_ = false;
  std::set<std::string_view, std::less<>> args_;
};

void Register(CLI::App& app, Commands& c, const Wanted& wanted) {
  AddGlobalOptions(app, c.global);
  app.set_version_flag("--version", "gpulet " GPULET_VERSION,
                       "Print the gpulet version and exit");
  // Global options may follow any subcommand (`gpulet devices --nvml-lib
  // X`): subcommands added from here on inherit this, and an option a
  // subcommand does not know is looked up in its parent.
  app.fallthrough();
  if (wanted("devices")) c.devices = AddDevicesCommand(app, c.devices_options);
  if (wanted("topo")) c.topo = AddTopoCommand(app, c.topo_options);
  if (wanted("sim")) c.sim = AddSimCommand(app, c.sim_options);
  if (wanted("cdi")) c.cdi = AddCdiCommand(app, c.cdi_options);
  if (wanted("plugin")) c.plugin = AddPluginCommand(app, c.plugin_options);
  if (wanted("runtime")) c.runtime = AddRuntimeCommand(app, c.runtime_options);
  if (wanted("extender")) {
    c.extender = AddExtenderCommand(app, c.extender_options);
  }
  if (wanted("dra")) {
    c.dra = AddDraCommand(app, c.dra_options);
    c.dra_webhook = AddDraWebhookCommand(*c.dra, c.dra_webhook_options);
  }
  if (wanted("labels")) c.labels = AddLabelsCommand(app, c.labels_options);
  if (wanted("vfio")) c.vfio = AddVfioCommand(app, c.vfio_options);
  if (wanted("version")) {
    c.version = app.add_subcommand("version", "Print the gpulet version");
  }
  app.require_subcommand(1);
}

// Whether `cmd` was built and named on the command line.
bool Parsed(const CLI::App* cmd) { return cmd != nullptr && cmd->parsed(); }

int Fail(std::ostream& err, int code, const std::string& message) {
  err << "gpulet: " << message << "\n";
  return code;
}

// The innermost subcommand named on the command line (`app` itself if none).
CLI::App* Innermost(CLI::App* app) {
  for (;;) {
    std::vector<CLI::App*> parsed = app->get_subcommands();
    if (parsed.empty()) return app;
    app = parsed.front();
  }
}

// When the parser stopped because a command that needs a subcommand got
// none (`e` is CLI11's RequiredError): "unknown command ..." naming the
// first word it did not know (a mistyped subcommand) and the nearest name,
// or, without such a word, the commands it takes. Empty otherwise.
std::string UnknownCommand(CLI::App& app, const CLI::ParseError& e) {
  if (e.get_name() != "RequiredError") return "";
  CLI::App* cmd = Innermost(&app);
  if (cmd->get_require_subcommand_min() == 0) return "";
  std::string typed;
  for (const std::string& arg : app.remaining(true)) {
    if (!arg.empty() && arg[0] != '-') {
      typed = arg;
      break;
    }
  }
  std::vector<std::string> names;
  if (cmd == &app) {
    names = CommandNames();
  } else {
    for (CLI::App* sub : cmd->get_subcommands([](CLI::App*) { return true; })) {
      names.push_back(sub->get_name());
    }
  }
  std::string path;
  for (CLI::App* a = cmd; a != &app; a = a->get_parent()) {
    path = " " + a->get_name() + path;
  }
  path = "gpulet" + path;
  std::string list;
  for (const std::string& name : names) {
    list += (list.empty() ? "" : ", ") + name;
  }
  if (typed.empty()) {
    return "'" + path + "' needs a command (" + list + ")";
  }
  std::string message = "unknown command \"" + typed + "\" for '" + path + "'";
  if (std::optional<std::string> near = NearestName(typed, names)) {
    return message + "; did you mean '" + *near + "'?";
  }
  return message + " (commands: " + list + ")";
}

// Help, --help-all and --version print to `out` and succeed; anything else
// the parser rejects is a usage error.
int HandleParseError(CLI::App& app, const CLI::ParseError& e, std::ostream& out,
                     std::ostream& err) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    return app.exit(e, out, err);
  }
  std::string message = UnknownCommand(app, e);
  if (message.empty()) message = e.what();
  return Fail(err, kExitUsage, message + " (run 'gpulet --help' for usage)");
}

absl::Status Dispatch(Commands& c, std::ostream& out) {
  if (Parsed(c.devices)) return RunDevices(c.global, c.devices_options, out);
  if (Parsed(c.topo)) return RunTopo(c.global, c.topo_options, out);
  if (Parsed(c.sim)) return RunSim(c.sim_options, out);
  if (Parsed(c.cdi)) return RunCdi(c.global, c.cdi_options, out);
  if (Parsed(c.runtime)) return RunRuntimeConfigure(c.runtime_options, out);
  if (Parsed(c.vfio)) return RunVfio(c.global, c.vfio_options, out);
  out << "gpulet " << GPULET_VERSION << "\n";
  return absl::OkStatus();
}

int RunParsed(Commands& c, std::ostream& out, std::ostream& err) {
  ApplyLogging(c.global);
  if (Parsed(c.plugin)) return RunPlugin(c.global, c.plugin_options, err);
  if (Parsed(c.extender)) {
    return RunExtenderCommand(c.extender_options, err);
  }
  if (Parsed(c.dra_webhook)) {
    return RunDraWebhookCommand(c.dra_webhook_options, err);
  }
  if (Parsed(c.dra)) return RunDraCommand(c.global, c.dra_options, err);
  if (Parsed(c.labels)) {
    return RunLabels(c.global, c.labels_options, out, err);
  }
  if (Parsed(c.sim)) {
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

// Kubernetes components take klog's `-v=N`; CLI11 would read a short option's
// attached value as "=N". Such an argument becomes `--v=N` (up to a `--`).
std::vector<std::string> KlogStyleArgs(int argc, const char* const* argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size() && args[i] != "--"; ++i) {
    if (args[i].starts_with("-v=")) args[i].insert(0, "-");
  }
  return args;
}

}  // namespace

int Run(int argc, const char* const* argv, std::ostream& out,
        std::ostream& err) {
  try {
    std::vector<std::string> args = KlogStyleArgs(argc, argv);
    std::vector<const char*> arg_ptrs;
    arg_ptrs.reserve(args.size());
    for (const std::string& a : args) arg_ptrs.push_back(a.c_str());
    const int n = static_cast<int>(arg_ptrs.size());
    CLI::App app("gpulet: GPUs for Kubernetes", "gpulet");
    Commands commands;
    Register(app, commands, Wanted(n, arg_ptrs.data()));
    try {
      app.parse(n, arg_ptrs.data());
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
