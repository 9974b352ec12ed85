#include "src/model/resources/resources.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "src/model/resources/device_map.h"
#include "src/model/resources/memory_units.h"

namespace gpulet::resources {
namespace {

using config::MigStrategy;

// '*' matches any run of characters, everything else itself.
bool GlobMatch(const std::string& pattern, const std::string& text) {
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool UsesMig(const device::Gpu& gpu, MigStrategy strategy) {
  return gpu.mig_enabled && strategy != MigStrategy::kNone;
}

std::string VisibleId(const config::Config& config, const std::string& uuid,
                      const std::string& index) {
  return config.flags.plugin.device_id_strategy ==
                 config::DeviceIdStrategy::kIndex
             ? index
             : uuid;
}

MappedDevice GpuDevice(const device::Gpu& gpu, const config::Config& config,
                       int order) {
  MappedDevice m;
  m.uuid = gpu.uuid;
  m.index = absl::StrCat(gpu.index);
  m.order = order;
  pluginapi::Device& d = m.device;
  d.id = gpu.uuid;
  d.healthy = gpu.failure.empty();
  d.visible_id = VisibleId(config, m.uuid, m.index);
  if (gpu.numa_node.has_value()) d.numa_nodes = {*gpu.numa_node};
  d.gpu_index = static_cast<int>(gpu.index);
  d.device_nodes = {absl::StrCat("/dev/nvidia", gpu.minor)};
  return m;
}

MappedDevice MigDevice(const device::Gpu& gpu, const device::MigDevice& mig,
                       const config::Config& config,
                       const ResourceOptions& options, int order) {
  MappedDevice m = GpuDevice(gpu, config, order);
  m.uuid = mig.uuid;
  m.index = absl::StrCat(gpu.index, ":", mig.mig_index);
  m.parent_uuid = gpu.uuid;
  pluginapi::Device& d = m.device;
  d.id = mig.uuid;
  d.visible_id = VisibleId(config, m.uuid, m.index);
  d.gpu_instance_id = static_cast<int>(mig.gpu_instance_id);
  d.compute_instance_id = static_cast<int>(mig.compute_instance_id);
  if (options.mig_caps_nodes) {
    for (std::string& node : options.mig_caps_nodes(gpu, mig)) {
      d.device_nodes.push_back(std::move(node));
    }
  }
  return m;
}

std::vector<config::Resource> GpuPatterns(const config::Config& config) {
  if (!config.resources.gpus.empty()) return config.resources.gpus;
  return {{"*", kGpuResource}};
}

// The resource a MIG device of `profile` belongs to; empty: none matches.
std::string MigResourceFor(const config::Config& config,
                           const std::string& profile) {
  for (const config::Resource& r : config.resources.mig) {
    if (GlobMatch(r.pattern, profile)) return r.name;
  }
  if (!config.resources.mig.empty()) return "";
  return config.flags.mig_strategy == MigStrategy::kSingle
             ? std::string(kGpuResource)
             : MixedMigResourceName(profile);
}

absl::Status CheckMigLayout(const device::Node& node, bool uniform) {
  for (const device::Gpu& gpu : node.gpus) {
    if (gpu.mig_enabled && gpu.mig_devices.empty() && gpu.failure.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "invalid MIG configuration: at least one device with "
          "migEnabled=true was not configured correctly: device ",
          gpu.index, " (", gpu.uuid, ") has an invalid MIG configuration"));
    }
  }
  if (!uniform) return absl::OkStatus();
  const device::MigDevice* first = nullptr;
  bool full_gpus = false;
  for (const device::Gpu& gpu : node.gpus) {
    if (gpu.uuid.empty()) continue;  // failed discovery, not advertised
    full_gpus |= !gpu.mig_enabled;
    for (const device::MigDevice& mig : gpu.mig_devices) {
      if (!gpu.mig_enabled) continue;
      if (first == nullptr) {
        first = &mig;
      } else if (mig.profile != first->profile ||
                 mig.memory_bytes != first->memory_bytes) {
        return absl::FailedPreconditionError(absl::StrCat(
            "invalid MIG configuration: more than one MIG device type present "
            "on node (",
            first->profile, " and ", mig.profile, " on GPU ", gpu.index, ")"));
      }
    }
  }
  if (first != nullptr && full_gpus) {
    return absl::FailedPreconditionError(
        "all devices on the node must be configured with the same migEnabled "
        "value (migStrategy single)");
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceMap> BaseDevices(const device::Node& node,
                                      const config::Config& config,
                                      const ResourceOptions& options) {
  const MigStrategy strategy = config.flags.mig_strategy;
  if (strategy != MigStrategy::kNone) {
    if (absl::Status s = CheckMigLayout(node, strategy == MigStrategy::kSingle);
        !s.ok()) {
      return s;
    }
  }
  DeviceMap map;
  const std::vector<config::Resource> gpu_patterns = GpuPatterns(config);
  int order = 0;
  for (const device::Gpu& gpu : node.gpus) {
    // A GPU that failed discovery before its UUID was read has no ID to
    // advertise; the daemon logs it.
    if (gpu.uuid.empty()) continue;
    if (!UsesMig(gpu, strategy)) {
      auto match = std::find_if(gpu_patterns.begin(), gpu_patterns.end(),
                                [&](const config::Resource& r) {
                                  return GlobMatch(r.pattern, gpu.name);
                                });
      // A failed GPU whose name was not read cannot be placed; it is left
      // out (the daemon logs it) rather than failing the whole node.
      if (match == gpu_patterns.end() && !gpu.failure.empty()) continue;
      if (match == gpu_patterns.end()) {
        return absl::FailedPreconditionError(
            absl::StrCat("GPU ", gpu.index, " name '", gpu.name,
                         "' does not match any resource patterns"));
      }
      map[match->name].push_back(GpuDevice(gpu, config, order++));
      continue;
    }
    for (const device::MigDevice& mig : gpu.mig_devices) {
      std::string name = MigResourceFor(config, mig.profile);
      if (name.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "MIG profile '", mig.profile, "' of MIG device ", gpu.index, ":",
            mig.mig_index, " does not match any resource patterns"));
      }
      map[name].push_back(MigDevice(gpu, mig, config, options, order++));
    }
  }
  return map;
}

std::string SharingPath(const config::Sharing& sharing) {
  return sharing.Strategy() == config::SharingStrategy::kMps
             ? "sharing.mps"
             : "sharing.timeSlicing";
}

}  // namespace

std::string SocketNameFor(const std::string& prefix,
                          const std::string& resource_name) {
  size_t slash = resource_name.rfind('/');
  std::string short_name = slash == std::string::npos
                               ? resource_name
                               : resource_name.substr(slash + 1);
  return absl::StrCat(prefix, "-", short_name, ".sock");
}

std::string MixedMigResourceName(const std::string& profile) {
  return absl::StrCat("nvidia.com/mig-",
                      absl::StrReplaceAll(profile, {{"+", "."}}));
}

absl::StatusOr<std::vector<ResourceSpec>> BuildResources(
    const device::Node& node, const config::Config& config,
    const ResourceOptions& options) {
  absl::StatusOr<DeviceMap> map = BaseDevices(node, config, options);
  if (!map.ok()) return map.status();
  if (config.sharing.memory.has_value()) {
    map = ApplyMemoryShares(*config.sharing.memory, node, *std::move(map));
    if (!map.ok()) return map.status();
  }
  if (const config::ReplicatedResources* shared = config.sharing.Active()) {
    map = ApplyReplicas(*shared, SharingPath(config.sharing), *std::move(map));
    if (!map.ok()) return map.status();
  }
  std::vector<ResourceSpec> resources;
  for (auto& [name, list] : *map) {
    if (list.empty()) continue;
    std::stable_sort(list.begin(), list.end(),
                     [](const MappedDevice& a, const MappedDevice& b) {
                       return std::tie(a.order, a.device.replica) <
                              std::tie(b.order, b.device.replica);
                     });
    ResourceSpec spec;
    spec.resource_name = name;
    spec.socket_name = SocketNameFor(options.socket_prefix, name);
    for (MappedDevice& m : list) spec.devices.push_back(std::move(m.device));
    resources.push_back(std::move(spec));
  }
  return resources;
}

}  // namespace gpulet::resources
