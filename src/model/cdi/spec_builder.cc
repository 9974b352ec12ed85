#include "src/model/cdi/spec_builder.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "src/base/common/logging.h"
#include "src/model/cdi/validate.h"

namespace gpulet::cdi {
namespace {

constexpr char kControlPaths[][24] = {"/dev/nvidiactl", "/dev/nvidia-uvm",
                                      "/dev/nvidia-uvm-tools",
                                      "/dev/nvidia-modeset"};

DeviceNode FromHost(const HostDeviceNode& host) {
  DeviceNode node;
  node.path = host.path;
  if (host.host_path != host.path) node.host_path = host.host_path;
  node.type = host.type;
  node.major = host.major;
  node.minor = host.minor;
  return node;
}

DeviceNode GpuNode(const Driver& driver, unsigned minor) {
  return NodeFor(driver, absl::StrCat("/dev/nvidia", minor), kNvidiaMajor,
                 minor);
}

DeviceNode CapNode(const Driver& driver, unsigned cap_minor) {
  auto it = driver.char_majors.find("nvidia-caps");
  int64_t major = it == driver.char_majors.end() ? -1 : it->second;
  return NodeFor(driver, absl::StrCat("/dev/nvidia-caps/nvidia-cap", cap_minor),
                 major, cap_minor);
}

// The MIG device's nodes, or FailedPrecondition naming what is missing.
absl::StatusOr<std::vector<DeviceNode>> MigNodes(const Driver& driver,
                                                 const device::Gpu& gpu,
                                                 const device::MigDevice& mig) {
  std::optional<unsigned> gi =
      driver.mig_minors.GpuInstance(gpu.minor, mig.gpu_instance_id);
  std::optional<unsigned> ci = driver.mig_minors.ComputeInstance(
      gpu.minor, mig.gpu_instance_id, mig.compute_instance_id);
  if (!gi || !ci) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MIG device ", mig.uuid, " (GPU ", gpu.index, " GI ",
        mig.gpu_instance_id, " CI ", mig.compute_instance_id,
        "): /proc/driver/nvidia-caps/mig-minors under ", driver.root,
        " does not list ", !gi ? "its GPU instance" : "its compute instance"));
  }
  return std::vector<DeviceNode>{GpuNode(driver, gpu.minor),
                                 CapNode(driver, *gi), CapNode(driver, *ci)};
}

void AddDevice(Spec& spec, const std::string& name,
               const std::vector<DeviceNode>& nodes) {
  Device device;
  device.name = name;
  device.edits.device_nodes = nodes;
  spec.devices.push_back(std::move(device));
}

// Every node of every device, first occurrence kept, in device order.
std::vector<DeviceNode> UnionOfNodes(const std::vector<Device>& devices) {
  std::vector<DeviceNode> all;
  std::set<std::string> seen;
  for (const Device& d : devices) {
    for (const DeviceNode& n : d.edits.device_nodes) {
      if (seen.insert(n.path).second) all.push_back(n);
    }
  }
  return all;
}

absl::Status AddGpuDevices(Spec& spec, const device::Node& node,
                           const Driver& driver, const BuildOptions& options) {
  for (const device::Gpu& gpu : node.gpus) {
    std::vector<DeviceNode> nodes = {GpuNode(driver, gpu.minor)};
    AddDevice(spec, absl::StrCat(gpu.index), nodes);
    AddDevice(spec, gpu.uuid, nodes);
  }
  for (const device::Gpu& gpu : node.gpus) {
    if (!gpu.mig_enabled) continue;
    for (const device::MigDevice& mig : gpu.mig_devices) {
      absl::StatusOr<std::vector<DeviceNode>> nodes =
          MigNodes(driver, gpu, mig);
      if (!nodes.ok()) {
        if (options.require_mig_caps) return nodes.status();
        GPULET_LOG(WARNING)
            << "CDI spec leaves out " << nodes.status().message();
        continue;
      }
      AddDevice(spec, absl::StrCat(gpu.index, ":", mig.mig_index), *nodes);
      AddDevice(spec, mig.uuid, *nodes);
    }
  }
  return absl::OkStatus();
}

bool Wanted(const BuildOptions& options, const std::string& capability) {
  return options.capabilities.empty() ||
         std::find(options.capabilities.begin(), options.capabilities.end(),
                   capability) != options.capabilities.end();
}

Mount ReadOnlyBind(const HostFile& file) {
  return Mount{file.host_path, file.path, "",
               std::vector<std::string>(std::begin(kMountOptions),
                                        std::end(kMountOptions))};
}

ContainerEdits CommonEdits(const Driver& driver, const BuildOptions& options) {
  ContainerEdits edits;
  edits.env.push_back("NVIDIA_VISIBLE_DEVICES=void");
  for (const char* path : kControlPaths) {
    if (const HostDeviceNode* host = driver.FindNode(path)) {
      edits.device_nodes.push_back(FromHost(*host));
    }
  }
  std::set<std::string> library_dirs;
  for (const HostFile& lib : driver.libraries) {
    if (!Wanted(options, lib.capability)) continue;
    edits.mounts.push_back(ReadOnlyBind(lib));
    library_dirs.insert(lib.path.substr(0, lib.path.rfind('/')));
  }
  if (options.mount_binaries) {
    for (const HostFile& bin : driver.binaries) {
      edits.mounts.push_back(ReadOnlyBind(bin));
    }
  }
  if (!library_dirs.empty()) {
    Hook hook;
    hook.hook_name = "createContainer";
    hook.path = options.hook_path;
    hook.args = {"gpulet-runtime", "hook", "update-ldcache"};
    for (const std::string& dir : library_dirs) {
      hook.args.push_back("--folder");
      hook.args.push_back(dir.empty() ? "/" : dir);
    }
    edits.hooks.push_back(std::move(hook));
  }
  return edits;
}

void SetHookDefaults(ContainerEdits& edits) {
  for (Hook& hook : edits.hooks) {
    if (hook.env.empty()) hook.env = {kHookEnv};
    if (!hook.timeout) hook.timeout = kHookTimeoutSeconds;
  }
}

}  // namespace

void SetHookDefaults(Spec& spec) {
  SetHookDefaults(spec.edits);
  for (Device& device : spec.devices) SetHookDefaults(device.edits);
}

DeviceNode NodeFor(const Driver& driver, const std::string& path, int64_t major,
                   int64_t minor) {
  if (const HostDeviceNode* host = driver.FindNode(path))
    return FromHost(*host);
  DeviceNode node;
  node.path = path;
  std::string host_path = UnderRoot(driver.dev_root, path);
  if (host_path != path) node.host_path = host_path;
  if (major >= 0) {
    node.type = "c";
    node.major = major;
    node.minor = minor;
  }
  return node;
}

absl::StatusOr<Spec> BuildSpec(const device::Node& node, const Driver& driver,
                               const BuildOptions& options) {
  absl::Status vendor = ValidateVendorName(options.vendor);
  if (!vendor.ok()) return vendor;
  absl::Status cls = ValidateClassName(options.cls);
  if (!cls.ok()) return cls;
  if (node.gpus.empty()) {
    return absl::FailedPreconditionError(
        "the node has no GPU: a CDI spec needs at least one device");
  }
  Spec spec;
  spec.kind = absl::StrCat(options.vendor, "/", options.cls);
  absl::Status devices = AddGpuDevices(spec, node, driver, options);
  if (!devices.ok()) return devices;
  AddDevice(spec, "all", UnionOfNodes(spec.devices));
  spec.edits = CommonEdits(driver, options);
  SetHookDefaults(spec);
  spec.cdi_version = MinimumVersion(spec);
  absl::Status valid = Validate(spec);
  if (!valid.ok()) {
    return absl::InternalError(
        absl::StrCat("generated CDI spec is invalid: ", valid.message()));
  }
  return spec;
}

}  // namespace gpulet::cdi
