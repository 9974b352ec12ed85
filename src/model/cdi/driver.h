// Driver discovery: what of the NVIDIA driver a container needs, found on
// the host's file system without NVML. Given a driver root (where the
// driver's user-space files live: "/" or e.g. "/run/nvidia/driver"), a dev
// root (where /dev/nvidia* live) and the driver version NVML reported, it
// lists the NVIDIA device nodes present, the driver's libraries of that
// exact version (found through the root's etc/ld.so.cache, then the standard
// library directories), the utility binaries, and the MIG capability minors
// and character majors from the proc files.
//
// Paths in a Driver come in pairs: `path` as the container sees it (the host
// path without the root prefix) and `host_path` with the root prefix.
//
// Thread safety: DiscoverDriver reads the file system and keeps no state;
// Driver is a plain value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/model/cdi/proc_files.h"

namespace gpulet::cdi {

struct HostDeviceNode {
  std::string path;       // "/dev/nvidia0"
  std::string host_path;  // dev root + path
  std::string type;       // "c" or "b"
  int64_t major = 0;
  int64_t minor = 0;
  uint32_t file_mode = 0;  // permission bits
  bool operator==(const HostDeviceNode&) const = default;
};

struct HostFile {
  std::string path;        // "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"
  std::string host_path;   // driver root + path
  std::string capability;  // NVIDIA_DRIVER_CAPABILITIES name: "compute", ...
  bool operator==(const HostFile&) const = default;
};

struct Driver {
  std::string root;      // driver root as given, "/" by default
  std::string dev_root;  // dev root as given
  std::string version;   // "550.54.15"
  // NVIDIA nodes found under <dev root>/dev: nvidiactl, nvidia-uvm,
  // nvidia-uvm-tools, nvidia-modeset, nvidia<N>, nvidia-caps/nvidia-cap<N>;
  // sorted by path.
  std::vector<HostDeviceNode> device_nodes;
  std::vector<HostFile> libraries;  // sorted by path, one per library
  std::vector<HostFile> binaries;   // sorted by path, one per name
  MigMinors mig_minors;             // empty when the proc file is absent
  // Character majors from <proc root>/proc/devices (empty when absent).
  std::map<std::string, int64_t> char_majors;

  // The node with container path `path`, or null.
  const HostDeviceNode* FindNode(const std::string& path) const;
};

struct DriverOptions {
  std::string driver_root = "/";
  std::string dev_root;   // empty: the driver root
  std::string proc_root;  // empty: the driver root; its proc/ is read
  std::string version;    // required: NVML's driver version
};

// Errors: InvalidArgument for an empty version; NotFound / PermissionDenied
// naming the driver root or dev root when it is missing, not a directory
// or unreadable; InvalidArgument naming the file for a malformed
// mig-minors. A corrupt ld.so.cache is logged and the standard library
// directories are searched instead.
absl::StatusOr<Driver> DiscoverDriver(const DriverOptions& options);
absl::StatusOr<Driver> DiscoverDriver(const std::string& driver_root,
                                      const std::string& dev_root,
                                      const std::string& driver_version);

// The libraries gpulet looks for, as file-name stems ("libcuda.so"), with
// their capability: utility (libnvidia-ml, libnvidia-cfg), compute (libcuda,
// libnvidia-ptxjitcompiler, libnvidia-opencl, libnvidia-gpucomp,
// libnvidia-nvvm, ...), video (libnvcuvid, libnvidia-encode, ...). The same
// set libnvidia-container mounts for these capabilities.
struct LibrarySpec {
  const char* stem;
  const char* capability;
};
const std::vector<LibrarySpec>& KnownLibraries();
// nvidia-smi, nvidia-debugdump, nvidia-persistenced, nvidia-cuda-mps-control,
// nvidia-cuda-mps-server.
const std::vector<std::string>& KnownBinaries();

// The host path of the driver's binary `name` under `root`: the first of
// /usr/bin, /usr/sbin, /bin, /sbin, /usr/local/bin that holds it as a
// regular file. NotFound naming the root and the directories searched.
absl::StatusOr<std::string> FindDriverBinary(const std::string& root,
                                             const std::string& name);

// `root` + `path` for an absolute `path`; just `path` when root is "/" or "".
std::string UnderRoot(const std::string& root, const std::string& path);

}  // namespace gpulet::cdi
