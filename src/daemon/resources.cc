#include "src/daemon/resources.h"

#include "absl/strings/str_cat.h"

namespace gpulet::daemon {
namespace {

plugin::Device GpuDevice(const device::Gpu& gpu) {
  plugin::Device d;
  d.id = gpu.uuid;
  d.visible_id = gpu.uuid;
  d.healthy = true;
  if (gpu.numa_node.has_value()) d.numa_nodes = {*gpu.numa_node};
  d.gpu_index = static_cast<int>(gpu.index);
  return d;
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

std::vector<ResourceSpec> BuildResources(const device::Node& node,
                                         const std::string& socket_prefix) {
  std::vector<ResourceSpec> resources;
  if (node.gpus.empty()) return resources;
  ResourceSpec gpus;
  gpus.resource_name = kGpuResource;
  gpus.socket_name = SocketNameFor(socket_prefix, kGpuResource);
  for (const device::Gpu& gpu : node.gpus)
    gpus.devices.push_back(GpuDevice(gpu));
  resources.push_back(std::move(gpus));
  return resources;
}

}  // namespace gpulet::daemon
