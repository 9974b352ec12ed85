// The sysfs writes that move a GPU's IOMMU group to vfio-pci and back, as
// values (what `gpulet vfio bind|unbind` prints with --dry-run and then
// performs, see binder.h).
//
// Bind, for each function of the group that is not on vfio-pci and not a
// bridge, companions first and the GPU last:
//   echo vfio-pci > <sys>/bus/pci/devices/<fn>/driver_override
//   echo <fn>     > <sys>/bus/pci/drivers/<driver>/unbind    (when bound)
//   echo <fn>     > <sys>/bus/pci/drivers_probe
// Unbind, for each function on vfio-pci, the GPU first:
//   echo          > <sys>/bus/pci/devices/<fn>/driver_override  (clears it)
//   echo <fn>     > <sys>/bus/pci/drivers/vfio-pci/unbind
//   echo <fn>     > <sys>/bus/pci/drivers/<previous>/bind   (remembered)
//     or <sys>/bus/pci/drivers_probe                        (not remembered)
//
// Thread safety: pure functions.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/gpu/vfio/vfio.h"

namespace gpulet::vfio {

struct SysfsWrite {
  std::filesystem::path path;
  std::string value;     // written with a trailing newline
  std::string function;  // the function whose binding this moves
  // After the write, wait until `function`'s driver is this ("" = unbound).
  // `wait` false: nothing to wait for (driver_override).
  bool wait = false;
  std::string expect_driver;
  // drivers_probe without a remembered driver: any driver (or none) will do.
  bool any_driver = false;
};

struct BindPlan {
  std::string gpu;  // the GPU's address, for messages
  int group = -1;
  std::vector<SysfsWrite> writes;  // empty: nothing to do
  // Functions whose driver the plan replaces: address -> driver before.
  std::map<std::string, std::string> previous;
  std::vector<std::string> notes;  // "also binds 0000:33:00.0 (same group)"
};

// Refuses (FailedPrecondition naming the GPU, the function, its class and
// driver) when the group holds a function of another vendor that is bound
// to a host driver and is not a bridge: giving it to a VM would take it
// from the host. FailedPrecondition too when the GPU has no IOMMU group.
absl::StatusOr<BindPlan> PlanBind(const Roots& roots, const Gpu& gpu);

// `remembered`: address -> the driver it had before bind (state file).
BindPlan PlanUnbind(const Roots& roots, const Gpu& gpu,
                    const std::map<std::string, std::string>& remembered);

}  // namespace gpulet::vfio
