#include "src/cli/cdi_command.h"

#include "src/base/common/file_util.h"
#include "src/base/common/status_macros.h"
#include "src/gpu/device/discovery.h"
#include "src/model/cdi/passthrough_spec.h"
#include "src/model/cdi/spec_codec.h"
#include "src/model/cdi/spec_file.h"

namespace gpulet::cli {

CLI::App* AddCdiCommand(CLI::App& app, CdiOptions& options) {
  CLI::App* cdi =
      app.add_subcommand("cdi", "Container Device Interface (CDI) specs");
  cdi->require_subcommand(1);
  CLI::App* generate = cdi->add_subcommand(
      "generate", "Print or write the CDI spec for this node's GPUs");
  generate->add_option("--format", options.format, "Spec format")
      ->check(CLI::IsMember({"yaml", "json"}))
      ->capture_default_str();
  generate->add_option("--output", options.output,
                       "Write the spec to this file (atomically) instead of "
                       "standard output");
  generate->add_option("--vendor", options.vendor, "CDI vendor")
      ->capture_default_str();
  generate->add_option("--class", options.cls, "CDI device class")
      ->capture_default_str();
  generate
      ->add_option("--dev-root", options.dev_root,
                   "Root under which /dev/nvidia* live (default: the driver "
                   "root)")
      ->envname("NVIDIA_DEV_ROOT");
  generate->add_option("--hook-path", options.hook_path,
                       "gpulet-runtime path for the ld-cache hook (default "
                       "/usr/bin/gpulet-runtime)");
  generate->add_flag("--skip-unresolved-mig", options.skip_unresolved_mig,
                     "Leave out MIG devices whose capability minors are "
                     "unknown instead of failing");
  generate->add_option("--passthrough-output", options.passthrough_output,
                       "Also write the CDI spec of the GPUs bound to vfio-pci "
                       "(kind <vendor>/pgpu) to this file");
  generate
      ->add_option("--vfio-dev-root", options.vfio_dev_root,
                   "Where the host's /dev (vfio/, iommu) is seen, for "
                   "the passthrough spec")
      ->capture_default_str();
  return cdi;
}

namespace {

absl::Status WritePassthroughSpec(const GlobalOptions& global,
                                  const CdiOptions& options,
                                  cdi::Format format) {
  GPULET_ASSIGN_OR_RETURN(
      vfio::Inventory inventory,
      vfio::Discover(vfio::Roots{global.sysfs_root, options.vfio_dev_root}));
  GPULET_ASSIGN_OR_RETURN(cdi::Spec spec,
                          cdi::BuildPassthroughSpec(inventory, options.vendor,
                                                    options.vfio_dev_root));
  return common::WriteFileAtomic(options.passthrough_output,
                                 cdi::FormatSpec(spec, format));
}

}  // namespace

absl::Status RunCdi(const GlobalOptions& global, const CdiOptions& options,
                    std::ostream& out) {
  GPULET_ASSIGN_OR_RETURN(cdi::Format format, cdi::ParseFormat(options.format));
  if (!options.passthrough_output.empty()) {
    GPULET_RETURN_IF_ERROR(WritePassthroughSpec(global, options, format));
  }
  GPULET_ASSIGN_OR_RETURN(NvmlSession nvml, OpenNvml(global));
  device::Node node;  // stays empty on a node without GPUs: BuildSpec says so
  if (nvml.lib != nullptr) {
    GPULET_ASSIGN_OR_RETURN(
        node, device::Discover(*nvml.lib,
                               device::DiscoveryOptions{global.sysfs_root}));
    GPULET_RETURN_IF_ERROR(nvml.lib->Shutdown());
  }
  // A node whose every GPU is for VMs has only the passthrough spec.
  if (node.gpus.empty() && !options.passthrough_output.empty()) {
    return absl::OkStatus();
  }
  cdi::DriverOptions driver;
  driver.driver_root = global.driver_root;
  driver.dev_root = options.dev_root;
  cdi::BuildOptions build;
  build.vendor = options.vendor;
  build.cls = options.cls;
  if (!options.hook_path.empty()) build.hook_path = options.hook_path;
  build.require_mig_caps = !options.skip_unresolved_mig;
  GPULET_ASSIGN_OR_RETURN(cdi::Spec spec,
                          cdi::GenerateSpec(node, driver, build));
  std::string text = cdi::FormatSpec(spec, format);
  if (options.output.empty()) {
    out << text;
    return absl::OkStatus();
  }
  return common::WriteFileAtomic(options.output, text);
}

}  // namespace gpulet::cli
