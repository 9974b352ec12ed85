// Rendering the rest of a simulated GPU node: everything a real node has
// besides NVML, written under a root directory from the same Machine the
// simulator answers from, so that any tool looking at those files (NVIDIA's
// device plugin, nvidia-ctk, gpulet's own CDI discovery and device specs)
// sees the node NVML describes:
//
//   <root>/dev/nvidia<minor>, nvidiactl, nvidia-uvm, nvidia-uvm-tools,
//       nvidia-modeset, nvidia-caps/nvidia-cap<N>,
//       nvidia-caps-imex-channels/channel0 (machines with IMEX channels)
//                                                    character devices
//   <root>/proc/devices                              the driver's majors
//   <root>/proc/driver/nvidia/version, gpus/<bdf>/information,
//       capabilities/{mig/config,mig/monitor,gpu<minor>/mig/gi<N>/access,
//       .../ci<M>/access}
//   <root>/proc/driver/nvidia-caps/mig-minors
//   <root>/sys/bus/pci/devices/<bdf>/{vendor,device,subsystem_vendor,
//       subsystem_device,class,numa_node,driver_override,
//       driver -> drivers/<bound driver>, iommu_group ->
//       kernel/iommu_groups/<n>} for every GPU (NVML's and those on other
//       drivers) and the other functions of its IOMMU group; mdev types and
//       instances; and
//   <root>/dev/vfio/{vfio,<group>}, <root>/dev/iommu     (sysfs_tree.h)
//   <root>/<driver dir>/usr/lib/<multiarch>/lib*.so.<driver version>,
//       their SONAME and .so links, usr/bin/nvidia-smi & co., etc/ld.so.cache
//
// Nothing outside <root> is touched. Rendering again over an earlier
// rendering of any machine replaces it: files are written atomically
// (write to a temporary name, rename), device nodes and links are replaced
// when they differ, and what the previous rendering left that this machine
// lacks (a GPU's node, a driver version's libraries) is removed.
//
// Thread safety: RenderNode touches only the file system under the root;
// the text builders are pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sim/machine.h"

namespace gpulet::sim {

// Character majors. nvidia (195) is fixed by the driver; nvidia-uvm and
// nvidia-caps (and nvidia-caps-imex-channels) are allocated dynamically by
// the kernel, and these are values real nodes commonly show.
// <root>/proc/devices lists them.
inline constexpr unsigned kNvidiaMajor = 195;
inline constexpr unsigned kNvidiaCtlMinor = 255;
inline constexpr unsigned kNvidiaModesetMinor = 254;
inline constexpr unsigned kNvidiaUvmMajor = 511;
inline constexpr unsigned kNvidiaCapsMajor = 235;
inline constexpr unsigned kNvidiaCapsImexMajor = 234;

// How device nodes are made.
enum class DevNodes {
  kMknod,  // real character devices; needs CAP_MKNOD (root)
  kFiles,  // empty regular files: enough for tools that only stat them
};

struct RenderOptions {
  std::string root;                   // required, made if missing
  std::string driver_dir = "driver";  // driver root, relative to `root`
  DevNodes dev_nodes = DevNodes::kMknod;
  // Optional: a file copied as the driver's libnvidia-ml.so.<version> (the
  // simulator library), so a tool loading NVML from the driver root gets
  // the simulator. Empty: a stub like every other library.
  std::string nvml_library;
};

// Renders `machine` under options.root. Errors name the path: InvalidArgument
// for an empty or relative-looking root, or a machine without a driver
// (the no-driver profile renders nothing: there is no driver to show);
// PermissionDenied when mknod is refused (the message says to run as root
// or use DevNodes::kFiles); other errno failures as their code.
absl::Status RenderNode(const Machine& machine, const RenderOptions& options);

// ---- text builders (pure) ---------------------------------------------------

// "0000:18:00.0" from NVML's "00000000:18:00.0": the domain cut to four
// digits, hex lower-cased, as /sys and /proc name PCI devices.
std::string SysfsBusId(const std::string& nvml_bus_id);

// /proc/driver/nvidia/version for the machine's driver version.
std::string ProcVersionText(const Machine& machine);

// /proc/driver/nvidia/gpus/<bdf>/information of one GPU.
std::string ProcGpuInformationText(const Gpu& gpu);

// /proc/driver/nvidia-caps/mig-minors as the driver writes it: "config 1",
// "monitor 2", then every GPU instance 0..14 and compute instance 0..7 of
// every possible GPU minor 0..31, numbered in that order from 3.
std::string MigMinorsText();

// The cap minor the driver gives GPU instance `gi` (and compute instance
// `ci`) of the GPU with device minor `gpu_minor`; the numbering of
// MigMinorsText.
unsigned GpuInstanceCapMinor(unsigned gpu_minor, unsigned gi);
unsigned ComputeInstanceCapMinor(unsigned gpu_minor, unsigned gi, unsigned ci);

// /proc/devices: the "Character devices:" section with the NVIDIA majors
// (and the kernel's usual first entries; nvidia-caps-imex-channels when
// `imex_channels`), then the block section.
std::string ProcDevicesText(bool imex_channels = false);

// One driver library the rendering installs.
struct DriverLibrary {
  std::string stem;    // "libcuda.so"
  std::string soname;  // "libcuda.so.1", or versioned for some
};
// The driver's libraries for `version`, with their real SONAMEs.
std::vector<DriverLibrary> DriverLibraries(const std::string& version);

// The driver root's nvidia-cuda-mps-control: a shell script that behaves
// as the real one where gpulet relies on it and records what it is told
// in $CUDA_MPS_LOG_DIRECTORY/control.log (docs/nvml-simulator.md).
std::string MpsControlScript(const std::string& version);

// The driver root's nvidia-smi: records each call's arguments in
// nvidia-smi.log beside it and succeeds (fails while nvidia-smi.refuse is
// there), so a test can see the compute policy gpulet set
// (docs/nvml-simulator.md).
std::string NvidiaSmiScript(const std::string& version);

// A glibc ld.so.cache (new format, "glibc-ld.so.cache1.1") mapping each
// SONAME to its path, entries in the order ld.so's binary search expects.
struct LdCacheRecord {
  std::string soname;
  std::string path;
};
std::string BuildLdCache(std::vector<LdCacheRecord> records);

}  // namespace gpulet::sim
