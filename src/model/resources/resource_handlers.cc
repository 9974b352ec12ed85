#include "src/model/resources/resource_handlers.h"

#include <sys/stat.h>

#include <memory>
#include <utility>
#include <vector>

#include "src/base/common/logging.h"
#include "src/gpu/device/device_nodes.h"
#include "src/gpu/device/mig_minors.h"

namespace gpulet::resources {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

allocation::DeviceListStrategy ToPlugin(config::DeviceListStrategy s) {
  switch (s) {
    case config::DeviceListStrategy::kEnvvar:
      return allocation::DeviceListStrategy::kEnvvar;
    case config::DeviceListStrategy::kVolumeMounts:
      return allocation::DeviceListStrategy::kVolumeMounts;
    case config::DeviceListStrategy::kCdiAnnotations:
      return allocation::DeviceListStrategy::kCdiAnnotations;
    case config::DeviceListStrategy::kCdiCri:
      return allocation::DeviceListStrategy::kCdiCri;
  }
  return allocation::DeviceListStrategy::kEnvvar;
}

bool IsShared(const ResourceSpec& spec) {
  for (const pluginapi::Device& d : spec.devices) {
    if (d.replica >= 0) return true;
  }
  return false;
}

}  // namespace

HostView MakeHostView(const config::Config& config) {
  HostView view;
  view.dev_root = config.flags.nvidia_dev_root.empty()
                      ? config.flags.nvidia_driver_root
                      : config.flags.nvidia_dev_root;
  const std::string& in_container = config.flags.plugin.container_driver_root;
  view.driver_root = IsDirectory(in_container)
                         ? in_container
                         : config.flags.nvidia_driver_root;
  view.probe_root = view.dev_root == config.flags.nvidia_driver_root
                        ? view.driver_root
                        : view.dev_root;
  return view;
}

absl::StatusOr<allocation::AllocateOptions> AllocateOptionsFor(
    const config::Config& config, const ResourceSpec& spec,
    const HostView& view) {
  allocation::AllocateOptions o;
  o.strategies.clear();
  for (config::DeviceListStrategy s :
       config.flags.plugin.device_list_strategy) {
    o.strategies.push_back(ToPlugin(s));
  }
  o.resource_name = spec.resource_name;
  o.pass_device_specs = config.flags.plugin.pass_device_specs;
  o.dev_root = view.dev_root;
  // nvidia-uvm appears when the first CUDA process loads it, so presence is
  // checked on every Allocate, as NVIDIA does, and where NVIDIA does: in
  // this process's own /dev, not under the dev root.
  o.control_nodes_probe = [root = view.own_root] {
    return device::PresentControlNodes(root);
  };
  o.gdrcopy_enabled = config.flags.gdrcopy_enabled;
  o.gds_enabled = config.flags.gds_enabled;
  o.mofed_enabled = config.flags.mofed_enabled;
  o.cdi_annotation_prefix = config.flags.plugin.cdi_annotation_prefix;
  if (!config.imex.channel_ids.empty()) {
    absl::StatusOr<std::vector<int>> channels = device::PresentImexChannels(
        view.probe_root, config.imex.channel_ids, config.imex.required);
    if (!channels.ok()) return channels.status();
    o.imex_channel_ids = *std::move(channels);
  }
  const config::ReplicatedResources* sharing = config.sharing.Active();
  // Memory units number their GPU's units in `replica`; they are not
  // time-slicing or MPS replicas.
  const bool memory_units =
      config.sharing.memory.has_value() &&
      spec.resource_name == config.sharing.memory->resource_name;
  if (sharing != nullptr && IsShared(spec) && !memory_units) {
    bool mps = config.sharing.Strategy() == config::SharingStrategy::kMps;
    o.fail_requests_greater_than_one =
        mps || sharing->fail_requests_greater_than_one;
    if (mps) o.mps_root = config.flags.mps_root;
  }
  if (absl::Status s = allocation::ValidateAllocateOptions(o); !s.ok())
    return s;
  return o;
}

ResourceOptions MakeResourceOptions(const std::string& socket_prefix,
                                    const HostView& view) {
  ResourceOptions options;
  options.socket_prefix = socket_prefix;
  absl::StatusOr<device::MigMinors> minors =
      device::LoadMigMinors(view.proc_root);
  if (!minors.ok()) {
    GPULET_VLOG(1) << "no MIG caps nodes: " << minors.status().message();
    return options;
  }
  auto shared = std::make_shared<const device::MigMinors>(*std::move(minors));
  options.mig_caps_nodes = [shared](const device::Gpu& gpu,
                                    const device::MigDevice& mig) {
    absl::StatusOr<std::vector<std::string>> nodes = device::MigCapNodes(
        *shared, gpu.minor, mig.gpu_instance_id, mig.compute_instance_id);
    if (!nodes.ok()) {
      GPULET_LOG(WARNING) << "MIG device " << mig.uuid << ": "
                          << nodes.status().message();
      return std::vector<std::string>{};
    }
    return *std::move(nodes);
  };
  return options;
}

}  // namespace gpulet::resources
