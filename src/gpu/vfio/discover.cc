// Discover(): the NVIDIA GPUs under <sys>/bus/pci/devices with their IOMMU
// groups, iommufd cdevs, SR-IOV links and mdev types, and every mdev under
// <sys>/bus/mdev/devices.
#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "src/base/common/file_util.h"
#include "src/base/common/status_macros.h"
#include "src/gpu/vfio/vfio.h"

namespace gpulet::vfio {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadTrimmed(const fs::path& path) {
  GPULET_ASSIGN_OR_RETURN(std::string text, common::ReadFile(path.string()));
  return std::string(absl::StripAsciiWhitespace(text));
}

// "0x10de" (sysfs writes IDs and classes in hex with a 0x prefix).
absl::StatusOr<uint32_t> ReadHex(const fs::path& path, uint32_t max) {
  GPULET_ASSIGN_OR_RETURN(std::string text, ReadTrimmed(path));
  absl::string_view digits = text;
  absl::ConsumePrefix(&digits, "0x");
  uint32_t value = 0;
  if (digits.empty() || !absl::SimpleHexAtoi(digits, &value) || value > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        path.string(), ": expected a hex number such as 0x10de, got \"", text,
        "\""));
  }
  return value;
}

// The basename of a link's target, "" when there is no link. A dangling
// link still names its target (the kernel never leaves one; a broken tree
// gets the name, and writes through it fail naming the path).
std::string LinkBasename(const fs::path& path) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(path, ec);
  return ec ? "" : target.filename().string();
}

int LinkNumber(const fs::path& path) {
  int value = -1;
  const std::string name = LinkBasename(path);
  return absl::SimpleAtoi(name, &value) ? value : -1;
}

absl::StatusOr<PciFunction> ReadFunction(const fs::path& dir) {
  PciFunction fn;
  fn.address = dir.filename().string();
  GPULET_ASSIGN_OR_RETURN(uint32_t vendor, ReadHex(dir / "vendor", 0xffff));
  GPULET_ASSIGN_OR_RETURN(uint32_t device, ReadHex(dir / "device", 0xffff));
  GPULET_ASSIGN_OR_RETURN(fn.class_code, ReadHex(dir / "class", 0xffffff));
  fn.vendor = static_cast<uint16_t>(vendor);
  fn.device = static_cast<uint16_t>(device);
  // Optional attributes: absent on some virtual functions and old kernels.
  if (absl::StatusOr<uint32_t> v = ReadHex(dir / "subsystem_vendor", 0xffff);
      v.ok()) {
    fn.subsystem_vendor = static_cast<uint16_t>(*v);
  }
  if (absl::StatusOr<uint32_t> v = ReadHex(dir / "subsystem_device", 0xffff);
      v.ok()) {
    fn.subsystem_device = static_cast<uint16_t>(*v);
  }
  if (absl::StatusOr<std::string> numa = ReadTrimmed(dir / "numa_node");
      numa.ok()) {
    if (!absl::SimpleAtoi(*numa, &fn.numa_node)) fn.numa_node = -1;
  }
  fn.driver = LinkBasename(dir / "driver");
  fn.iommu_group = LinkNumber(dir / "iommu_group");
  return fn;
}

std::vector<std::string> ListDir(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<MdevType> ReadMdevTypes(const fs::path& dir) {
  std::vector<MdevType> types;
  for (const std::string& id : ListDir(dir / "mdev_supported_types")) {
    const fs::path type_dir = dir / "mdev_supported_types" / id;
    MdevType type;
    type.id = id;
    type.name = ReadTrimmed(type_dir / "name").value_or("");
    const std::string available =
        ReadTrimmed(type_dir / "available_instances").value_or("0");
    if (!absl::SimpleAtoi(available, &type.available_instances)) {
      type.available_instances = 0;
    }
    types.push_back(std::move(type));
  }
  return types;
}

// virtfn0, virtfn1, ... in numeric order.
std::vector<std::string> ReadVirtualFunctions(const fs::path& dir) {
  std::map<int, std::string> by_index;
  for (const std::string& name : ListDir(dir)) {
    absl::string_view rest = name;
    int index = 0;
    if (absl::ConsumePrefix(&rest, "virtfn") &&
        absl::SimpleAtoi(rest, &index)) {
      by_index[index] = LinkBasename(dir / name);
    }
  }
  std::vector<std::string> out;
  for (auto& [index, address] : by_index) out.push_back(std::move(address));
  return out;
}

absl::StatusOr<std::vector<PciFunction>> ReadGroup(
    const Roots& roots, int group,
    const std::map<std::string, PciFunction>& known) {
  std::vector<PciFunction> members;
  const fs::path dir =
      roots.sys / "kernel" / "iommu_groups" / std::to_string(group) / "devices";
  for (const std::string& address : ListDir(dir)) {
    auto it = known.find(address);
    if (it != known.end()) {
      members.push_back(it->second);
      continue;
    }
    GPULET_ASSIGN_OR_RETURN(PciFunction fn, ReadFunction(dir / address));
    members.push_back(std::move(fn));
  }
  return members;
}

absl::StatusOr<std::vector<Mdev>> ReadMdevs(const Roots& roots) {
  std::vector<Mdev> mdevs;
  const fs::path dir = roots.sys / "bus" / "mdev" / "devices";
  for (const std::string& uuid : ListDir(dir)) {
    Mdev mdev;
    mdev.uuid = uuid;
    mdev.type_id = LinkBasename(dir / uuid / "mdev_type");
    if (!mdev.type_id.empty()) {
      mdev.type_name =
          ReadTrimmed(dir / uuid / "mdev_type" / "name").value_or("");
    }
    mdev.iommu_group = LinkNumber(dir / uuid / "iommu_group");
    std::error_code ec;
    const fs::path real = fs::canonical(dir / uuid, ec);
    if (!ec) mdev.parent = real.parent_path().filename().string();
    mdevs.push_back(std::move(mdev));
  }
  return mdevs;
}

}  // namespace

absl::StatusOr<Inventory> Discover(const Roots& roots) {
  const fs::path devices = roots.sys / "bus" / "pci" / "devices";
  std::error_code ec;
  if (!fs::is_directory(devices, ec)) {
    return absl::NotFoundError(
        absl::StrCat(devices.string(), ": no PCI devices directory (is ",
                     roots.sys.string(), " a sysfs root?)"));
  }
  std::map<std::string, PciFunction> functions;
  for (const std::string& address : ListDir(devices)) {
    GPULET_ASSIGN_OR_RETURN(PciFunction fn, ReadFunction(devices / address));
    functions.emplace(address, std::move(fn));
  }
  Inventory inventory;
  inventory.iommufd = fs::exists(roots.dev / "iommu", ec);
  for (const auto& [address, fn] : functions) {
    if (!fn.IsNvidiaGpu()) continue;
    const fs::path dir = devices / address;
    Gpu gpu;
    gpu.function = fn;
    if (fn.iommu_group >= 0) {
      GPULET_ASSIGN_OR_RETURN(gpu.group,
                              ReadGroup(roots, fn.iommu_group, functions));
    }
    if (gpu.group.empty()) gpu.group.push_back(fn);
    const std::vector<std::string> cdevs = ListDir(dir / "vfio-dev");
    if (!cdevs.empty()) gpu.vfio_cdev = cdevs.front();
    gpu.virtual_functions = ReadVirtualFunctions(dir);
    gpu.physfn = LinkBasename(dir / "physfn");
    gpu.mdev_types = ReadMdevTypes(dir);
    inventory.gpus.push_back(std::move(gpu));
  }
  GPULET_ASSIGN_OR_RETURN(inventory.mdevs, ReadMdevs(roots));
  return inventory;
}

}  // namespace gpulet::vfio
