#include "src/dra/slices/node_facts.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <system_error>
#include <utility>

#include "src/gpu/device/pci_address.h"

namespace gpulet::draslice {

std::vector<std::optional<int>> NvLinkDomains(
    const device::Topology& topology) {
  const size_t n = topology.size();
  std::vector<size_t> root(n);
  std::iota(root.begin(), root.end(), size_t{0});
  auto find = [&](size_t i) {
    while (root[i] != i) i = root[i] = root[root[i]];
    return i;
  };
  std::vector<bool> linked(n, false);
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      if (topology.Links(a, b).count == 0) continue;
      linked[a] = linked[b] = true;
      root[find(a)] = find(b);
    }
  }
  std::vector<int> smallest(n, -1);
  for (size_t i = 0; i < n; ++i) {
    int& s = smallest[find(i)];
    const int index = static_cast<int>(topology.gpu(i).index);
    s = s < 0 ? index : std::min(s, index);
  }
  std::vector<std::optional<int>> domains(n);
  for (size_t i = 0; i < n; ++i) {
    if (linked[i]) domains[i] = smallest[find(i)];
  }
  return domains;
}

std::string ReadPcieRoot(const std::string& sysfs_root,
                         const std::string& bus_id) {
  std::optional<device::PciAddress> address = device::ParsePciAddress(bus_id);
  if (!address.has_value()) return "";
  const std::string bdf = device::SysfsBusId(*address);
  const std::filesystem::path link =
      std::filesystem::path(sysfs_root) / "bus/pci/devices" / bdf;
  std::error_code ec;
  std::filesystem::path target = std::filesystem::read_symlink(link, ec);
  if (ec) return "";
  if (target.is_relative()) target = link.parent_path() / target;
  target = target.lexically_normal();
  if (target.filename() != bdf) return "";
  // The component after the tree's "devices" directory names the root.
  const std::filesystem::path devices =
      (std::filesystem::path(sysfs_root) / "devices").lexically_normal();
  const std::filesystem::path rest = target.lexically_relative(devices);
  if (rest.empty() || rest.begin()->string().rfind("pci", 0) != 0) return "";
  return rest.begin()->string();
}

NodeDevices CollectNodeDevices(device::Node node,
                               const device::Topology* topology,
                               const std::string& sysfs_root,
                               std::set<std::string> unhealthy) {
  NodeDevices out;
  if (topology != nullptr) out.nvlink_domains = NvLinkDomains(*topology);
  for (const device::Gpu& gpu : node.gpus) {
    out.pcie_roots.push_back(ReadPcieRoot(sysfs_root, gpu.bus_id));
  }
  out.node = std::move(node);
  out.unhealthy = std::move(unhealthy);
  return out;
}

}  // namespace gpulet::draslice
