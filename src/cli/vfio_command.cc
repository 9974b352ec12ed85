#include "src/cli/vfio_command.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/status_macros.h"
#include "src/base/config/parser.h"
#include "src/cli/validators.h"
#include "src/gpu/device/pci_address.h"
#include "src/gpu/vfio/binder.h"
#include "src/gpu/vfio/gpu_selector.h"
#include "src/gpu/vfio/vfio.h"

namespace gpulet::cli {
namespace {

void AddVerbOptions(CLI::App& verb, VfioOptions& options) {
  verb.add_option("gpus", options.gpus,
                  "GPUs: index (PCI order), PCI address or GPU-<uuid>");
  verb.add_option("--config", options.config_file,
                  "Also every GPU this config file's passthrough section "
                  "selects (its sysRoot/devRoot unless given here)");
  verb.add_flag("--dry-run", options.dry_run,
                "Print each sysfs write instead of doing it");
  verb.add_option_function<std::string>(
      "--sys-root",
      [&options](const std::string& v) {
        options.sys_root = v;
        options.sys_root_given = true;
      },
      "sysfs root (default /sys)");
  verb.add_option_function<std::string>(
      "--dev-root",
      [&options](const std::string& v) {
        options.dev_root = v;
        options.dev_root_given = true;
      },
      "/dev root (default /dev)");
  verb.add_option("--state-dir", options.state_dir,
                  "Where the drivers before bind are kept")
      ->capture_default_str();
  verb.add_option("--timeout-ms", options.timeout_ms,
                  "How long to wait for the kernel to show each change")
      ->check(WholeNumberAtLeast(1))
      ->capture_default_str();
}

// UUID -> sysfs address of every GPU NVML enumerates; only asked for when
// an argument is a UUID, so bind works on nodes without a usable NVML.
absl::StatusOr<std::map<std::string, std::string>> UuidAddresses(
    const GlobalOptions& global, const VfioOptions& options) {
  std::map<std::string, std::string> out;
  bool wanted = false;
  for (const std::string& gpu : options.gpus) {
    wanted = wanted || absl::StartsWithIgnoreCase(gpu, "GPU-");
  }
  if (!wanted) return out;
  absl::StatusOr<NvmlSession> session = OpenNvml(global);
  if (!session.ok()) {
    return absl::Status(
        session.status().code(),
        absl::StrCat("looking up GPU UUIDs: ", session.status().message()));
  }
  if (session->lib == nullptr) return out;
  nvml::Library& lib = *session->lib;
  GPULET_ASSIGN_OR_RETURN(unsigned count, lib.DeviceGetCount());
  for (unsigned i = 0; i < count; ++i) {
    GPULET_ASSIGN_OR_RETURN(nvml::Device device, lib.DeviceGetHandleByIndex(i));
    GPULET_ASSIGN_OR_RETURN(std::string uuid, lib.DeviceGetUuid(device));
    GPULET_ASSIGN_OR_RETURN(nvml::PciInfo pci, lib.DeviceGetPciInfo(device));
    if (auto address = device::ParsePciAddress(pci.bus_id)) {
      out[absl::AsciiStrToUpper(uuid)] = device::SysfsBusId(*address);
    }
  }
  return out;
}

// The passthrough section of a config file; an error naming the file when
// it has none.
absl::StatusOr<config::Passthrough> PassthroughOf(const std::string& path) {
  GPULET_ASSIGN_OR_RETURN(config::Config config, config::LoadConfigFile(path));
  if (!config.passthrough) {
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     ": no passthrough section, so no GPU is selected for "
                     "passthrough (docs/passthrough.md#configuration)"));
  }
  return *config.passthrough;
}

}  // namespace

CLI::App* AddVfioCommand(CLI::App& app, VfioOptions& options) {
  CLI::App* vfio = app.add_subcommand(
      "vfio",
      "Bind GPUs (with their IOMMU groups) to vfio-pci for VMs, or back");
  vfio->require_subcommand(1);
  options.bind =
      vfio->add_subcommand("bind", "Bind each GPU's IOMMU group to vfio-pci");
  options.unbind = vfio->add_subcommand(
      "unbind", "Give each GPU's IOMMU group back to its previous drivers");
  AddVerbOptions(*options.bind, options);
  AddVerbOptions(*options.unbind, options);
  return vfio;
}

absl::Status RunVfio(const GlobalOptions& global, const VfioOptions& options,
                     std::ostream& out) {
  std::optional<config::Passthrough> section;
  if (!options.config_file.empty()) {
    GPULET_ASSIGN_OR_RETURN(section, PassthroughOf(options.config_file));
  } else if (options.gpus.empty()) {
    return absl::InvalidArgumentError(
        "no GPU given: name GPUs (index, PCI address, GPU-<uuid>) or pass "
        "--config FILE to take those its passthrough section selects");
  }
  vfio::Roots roots{options.sys_root, options.dev_root};
  if (section && !options.sys_root_given) roots.sys = section->sys_root;
  if (section && !options.dev_root_given) roots.dev = section->dev_root;
  GPULET_ASSIGN_OR_RETURN(vfio::Inventory inventory, vfio::Discover(roots));
  GPULET_ASSIGN_OR_RETURN(auto uuids, UuidAddresses(global, options));
  // Every argument is resolved before anything is written.
  std::vector<const vfio::Gpu*> gpus;
  auto add = [&gpus](const vfio::Gpu* gpu) {
    if (std::find(gpus.begin(), gpus.end(), gpu) == gpus.end()) {
      gpus.push_back(gpu);
    }
  };
  for (const std::string& argument : options.gpus) {
    GPULET_ASSIGN_OR_RETURN(const vfio::Gpu* gpu,
                            vfio::SelectGpu(inventory, argument, uuids));
    add(gpu);
  }
  if (section) {
    // One ConfigMap serves nodes that differ: an entry that selects nothing
    // here is reported, not an error.
    std::vector<std::string> unmatched;
    for (const vfio::Gpu* gpu :
         vfio::SelectedGpus(inventory, *section, &unmatched)) {
      add(gpu);
    }
    for (const std::string& message : unmatched) {
      out << options.config_file << ": " << message << "\n";
    }
    if (gpus.empty()) {
      out << options.config_file
          << ": its passthrough section selects no GPU on this node; "
             "nothing to do\n";
    }
  }
  vfio::Binder::Options binder_options;
  binder_options.state_dir = options.state_dir;
  binder_options.dry_run = options.dry_run;
  binder_options.timeout = std::chrono::milliseconds(options.timeout_ms);
  vfio::Binder binder(roots, binder_options, out);
  const bool bind = options.bind != nullptr && options.bind->parsed();
  for (const vfio::Gpu* gpu : gpus) {
    // A shared group moves with its first GPU; read the tree again so the
    // next GPU of that group sees where it is now.
    GPULET_ASSIGN_OR_RETURN(vfio::Inventory now, vfio::Discover(roots));
    GPULET_ASSIGN_OR_RETURN(const vfio::Gpu* current,
                            vfio::SelectGpu(now, gpu->function.address, {}));
    GPULET_RETURN_IF_ERROR(bind ? binder.Bind(*current)
                                : binder.Unbind(*current));
  }
  return absl::OkStatus();
}

}  // namespace gpulet::cli
