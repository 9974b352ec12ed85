// Binder: performs a BindPlan (bind_plan.h) on the host: writes each sysfs
// file, waits for the function's `driver` link to show the result, and at
// the end for the group's /dev/vfio/<group> node. The driver each function
// had before bind is kept in a state directory (one file per function,
// named by its address, holding the driver name) so that unbind can give it
// back; a function bound without gpulet keeps no file, and unbind then lets
// the kernel probe it.
//
// The kernel acts on a write before it returns; the simulator's fake kernel
// acts just after, which is why each write is followed by a wait (bounded
// by Options::timeout; on a real host it ends at once).
//
// Thread safety: one Binder per thread; it owns no shared state.
#pragma once

#include <chrono>
#include <filesystem>
#include <ostream>

#include "absl/status/status.h"
#include "src/gpu/vfio/bind_plan.h"
#include "src/gpu/vfio/vfio.h"

namespace gpulet::vfio {

class Binder {
 public:
  struct Options {
    std::filesystem::path state_dir = "/var/lib/gpulet/vfio";
    bool dry_run = false;  // print the writes, change nothing
    std::chrono::milliseconds timeout{10000};
  };

  // `out` receives one line per write (dry run) or per result.
  Binder(Roots roots, Options options, std::ostream& out);

  // Moves the GPU's IOMMU group to vfio-pci; a no-op with a message when it
  // is there already. Errors name the GPU and the path.
  absl::Status Bind(const Gpu& gpu);
  // Gives every function of the group on vfio-pci back to its previous
  // driver; a no-op with a message when none is on vfio-pci.
  absl::Status Unbind(const Gpu& gpu);

 private:
  absl::Status Perform(const BindPlan& plan);
  absl::Status Apply(const BindPlan& plan, const SysfsWrite& write);
  absl::Status WaitForGroupNode(const BindPlan& plan, bool present);
  absl::Status Remember(const BindPlan& plan);
  std::map<std::string, std::string> Remembered(const Gpu& gpu) const;
  void Forget(const BindPlan& plan) const;

  const Roots roots_;
  const Options options_;
  std::ostream& out_;
};

}  // namespace gpulet::vfio
