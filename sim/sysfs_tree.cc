#include "sim/sysfs_tree.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sim/render_fs.h"
#include "src/base/common/status_macros.h"

namespace gpulet::sim {
namespace {

namespace fs = std::filesystem;

std::string LinkName(const std::string& path) {
  std::error_code ec;
  fs::path target = fs::read_symlink(path, ec);
  return ec ? "" : target.filename().string();
}

// The lowest N with no <dev>/vfio/devices/vfio<N>.
unsigned FreeCdevNumber(const SysTree& tree) {
  unsigned n = 0;
  while (fs::exists(absl::StrCat(tree.dev, "/vfio/devices/vfio", n))) ++n;
  return n;
}

absl::Status AddVfioCdev(const SysTree& tree, const std::string& dir) {
  if (!fs::exists(tree.dev + "/iommu")) return absl::OkStatus();
  const unsigned n = FreeCdevNumber(tree);
  GPULET_RETURN_IF_ERROR(render::EnsureDir(tree.dev + "/vfio/devices"));
  GPULET_RETURN_IF_ERROR(
      render::EnsureDir(absl::StrCat(dir, "/vfio-dev/vfio", n)));
  return render::CharDevice(absl::StrCat(tree.dev, "/vfio/devices/vfio", n),
                            kVfioCdevMajor, n, tree.dev_nodes);
}

absl::Status RemoveVfioCdev(const SysTree& tree, const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir + "/vfio-dev", ec)) {
    const std::string name = entry.path().filename().string();
    fs::remove(absl::StrCat(tree.dev, "/vfio/devices/", name), ec);
  }
  fs::remove_all(dir + "/vfio-dev", ec);
  return absl::OkStatus();
}

}  // namespace

std::string FunctionDir(const SysTree& tree, const std::string& bdf) {
  return absl::StrCat(tree.sys, "/devices/pci", bdf.substr(0, 4), ":00/", bdf);
}

absl::Status BindFunction(const SysTree& tree, const std::string& bdf,
                          const std::string& driver) {
  const std::string dir = FunctionDir(tree, bdf);
  const std::string driver_dir = tree.sys + "/bus/pci/drivers/" + driver;
  if (!fs::is_directory(dir)) {
    return absl::NotFoundError(absl::StrCat("bind ", bdf, ": no ", dir));
  }
  if (!fs::is_directory(driver_dir)) {
    return absl::NotFoundError(
        absl::StrCat("bind ", bdf, ": no driver ", driver_dir));
  }
  if (const std::string bound = LinkName(dir + "/driver"); !bound.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "bind ", bdf, " to ", driver, ": already bound to ", bound));
  }
  GPULET_RETURN_IF_ERROR(render::Symlink(
      absl::StrCat("../../../../devices/pci", bdf.substr(0, 4), ":00/", bdf),
      driver_dir + "/" + bdf));
  if (driver == "vfio-pci") GPULET_RETURN_IF_ERROR(AddVfioCdev(tree, dir));
  // The driver link last: it is what a reader waits for.
  GPULET_RETURN_IF_ERROR(
      render::Symlink("../../../bus/pci/drivers/" + driver, dir + "/driver"));
  const std::string group = LinkName(dir + "/iommu_group");
  return group.empty() ? absl::OkStatus() : RefreshGroupNode(tree, group);
}

absl::Status UnbindFunction(const SysTree& tree, const std::string& bdf,
                            const std::string& driver) {
  const std::string dir = FunctionDir(tree, bdf);
  const std::string bound = LinkName(dir + "/driver");
  if (bound != driver) {
    return absl::FailedPreconditionError(
        absl::StrCat("unbind ", bdf, " from ", driver, ": bound to ",
                     bound.empty() ? "no driver" : bound));
  }
  std::error_code ec;
  fs::remove(tree.sys + "/bus/pci/drivers/" + driver + "/" + bdf, ec);
  GPULET_RETURN_IF_ERROR(RemoveVfioCdev(tree, dir));
  if (!fs::remove(dir + "/driver", ec) || ec) {
    return absl::InternalError(absl::StrCat("unbind ", bdf, ": remove ", dir,
                                            "/driver: ", ec.message()));
  }
  const std::string group = LinkName(dir + "/iommu_group");
  return group.empty() ? absl::OkStatus() : RefreshGroupNode(tree, group);
}

absl::Status RefreshGroupNode(const SysTree& tree, const std::string& group) {
  const std::string members =
      absl::StrCat(tree.sys, "/kernel/iommu_groups/", group, "/devices");
  // The kernel makes the group's node when the first of its functions
  // registers with vfio and removes it when the last one leaves; whether
  // the others are on vfio-pci too (viability) is only checked at open.
  bool any_vfio = false;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(members, ec)) {
    if (LinkName(entry.path().string() + "/driver") == "vfio-pci") {
      any_vfio = true;
    }
  }
  if (ec) return absl::NotFoundError(absl::StrCat("list ", members));
  const std::string node = absl::StrCat(tree.dev, "/vfio/", group);
  unsigned number = 0;
  if (!absl::SimpleAtoi(group, &number)) number = 0;
  if (any_vfio) {
    GPULET_RETURN_IF_ERROR(render::EnsureDir(tree.dev + "/vfio"));
    return render::CharDevice(node, kVfioGroupMajor, number, tree.dev_nodes);
  }
  fs::remove(node, ec);
  return absl::OkStatus();
}

std::string NativeDriver(uint32_t class_code, uint16_t vendor) {
  switch (class_code >> 16) {
    case 0x03:
      return vendor == 0x10de ? "nvidia" : "";
    case 0x04:
      return "snd_hda_intel";
    case 0x01:
      return (class_code >> 8) == 0x0108 ? "nvme" : "";
    case 0x02:
      return "mlx5_core";
    case 0x06:
      return (class_code >> 8) == 0x0604 ? "pcieport" : "";
    case 0x0c:
      if ((class_code >> 8) == 0x0c03) return "xhci_hcd";
      return vendor == 0x10de ? "nvidia-gpu" : "";  // the UCSI function
    default:
      return "";
  }
}

}  // namespace gpulet::sim
