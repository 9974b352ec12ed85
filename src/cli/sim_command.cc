#include "src/cli/sim_command.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "absl/strings/str_cat.h"
#include "sim/control_client.h"
#include "sim/fake_kernel.h"
#include "sim/node_render.h"
#include "sim/profiles.h"
#include "src/base/common/errors.h"
#include "src/base/common/unique_fd.h"
#include "src/cli/validators.h"

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
      ->check(WholeNumberAtLeast(1))
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
      ->check(WholeNumberAtLeast(1));
  wait_error->add_option("--count", options.count, "How many calls fail")
      ->check(WholeNumberAtLeast(1));

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
  CLI::App* kernel = sim->add_subcommand(
      "kernel",
      "Play the kernel on a rendered ROOT: react to driver bind/unbind "
      "writes until a signal (or, on a pipe, stdin's end)");
  kernel->add_option("root", options.root, "Directory rendered by sim render")
      ->required();
  kernel
      ->add_option("--dev-nodes", options.dev_nodes,
                   "How the group nodes it makes are made: mknod or files")
      ->check(CLI::IsMember({"mknod", "files"}))
      ->capture_default_str();
  kernel->add_option("--uevent-socket", options.uevent_socket,
                     "Unix datagram socket to send a uevent to for each "
                     "bind and unbind, as the kernel announces them "
                     "(passthrough.ueventSocket)");
  return sim;
}

void ResolveSimVerb(const CLI::App& sim, SimOptions& options) {
  for (const CLI::App* sub : sim.get_subcommands()) {
    options.verb = sub->get_name();
  }
}

absl::Status ValidateSimOptions(const SimOptions& options) {
  if (options.verb == "render" || options.verb == "kernel") {
    return absl::OkStatus();
  }
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

// Runs the fake kernel until SIGTERM, SIGINT or SIGHUP, or until stdin
// ends when it is a pipe (a test's child process), and stops it.
absl::Status RunKernel(const SimOptions& options, std::ostream& out) {
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, sig);
  sigset_t previous;
  // Blocked before the watcher thread starts, so it inherits the mask.
  pthread_sigmask(SIG_BLOCK, &signals, &previous);
  common::UniqueFd signal_fd(signalfd(-1, &signals, SFD_CLOEXEC));
  absl::Status status;
  if (!signal_fd.valid()) {
    status = common::ErrnoToStatus(errno, "signalfd");
  } else {
    const sim::SysTree tree{options.root + "/sys", options.root + "/dev",
                            options.dev_nodes == "files"
                                ? sim::DevNodes::kFiles
                                : sim::DevNodes::kMknod,
                            options.uevent_socket};
    absl::StatusOr<std::unique_ptr<sim::FakeKernel>> kernel =
        sim::FakeKernel::Start(tree);
    if (!kernel.ok()) {
      status = kernel.status();
    } else {
      out << "fake kernel watching " << tree.sys << std::endl;
      struct stat st;
      const bool stdin_pipe = ::fstat(0, &st) == 0 && S_ISFIFO(st.st_mode);
      pollfd fds[2] = {{signal_fd.get(), POLLIN, 0}, {0, POLLIN, 0}};
      for (;;) {
        if (::poll(fds, stdin_pipe ? 2 : 1, -1) < 0 && errno != EINTR) break;
        if (fds[0].revents != 0) {
          // Consumed, so it is not delivered when the mask is restored.
          signalfd_siginfo info;
          [[maybe_unused]] ssize_t n =
              ::read(signal_fd.get(), &info, sizeof(info));
          break;
        }
        char byte;
        if (fds[1].revents != 0 && ::read(0, &byte, 1) <= 0) break;
      }
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return status;
}

absl::Status RunSim(const SimOptions& options, std::ostream& out) {
  if (options.verb == "render") return RunRender(options, out);
  if (options.verb == "kernel") return RunKernel(options, out);
  absl::StatusOr<std::string> reply = sim::SendControlCommand(
      options.socket, SimControlLine(options), options.timeout_ms);
  if (!reply.ok()) return reply.status();
  out << *reply;
  if (!reply->empty() && reply->back() != '\n') out << "\n";
  return absl::OkStatus();
}

}  // namespace gpulet::cli
