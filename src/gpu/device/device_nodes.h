// Device node paths a GPU container needs, as NVIDIA's k8s-device-plugin
// names them for passDeviceSpecs: the per-node control nodes (each only if
// it exists), a GPU's /dev/nvidia<minor>, and IMEX channel nodes.
//
// Paths here are container paths ("/dev/nvidiactl"); on the host they live
// under the dev root (JoinRoot(dev_root, path)). Existence is checked
// under a root the caller names, so tests use a temp dir.
//
// Thread safety: stateless functions (they only stat files).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpulet::device {

// NVIDIA's order (internal/rm GetDevicePaths).
inline constexpr std::array<const char*, 4> kControlNodes = {
    "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset"};

inline constexpr char kImexChannelDir[] = "/dev/nvidia-caps-imex-channels";

// Go's filepath.Join(root, path): joined with one '/', then cleaned ("//",
// "." and ".." resolved lexically, no trailing '/'). An empty root gives
// the cleaned path; both empty give "".
std::string JoinRoot(const std::string& root, const std::string& path);

// The control nodes that exist under `root` (anything stat() accepts, as
// NVIDIA checks with os.Stat), as container paths in kControlNodes order.
std::vector<std::string> PresentControlNodes(const std::string& root);

// "/dev/nvidia<minor>".
std::string GpuDeviceNode(unsigned minor);

// "/dev/nvidia-caps-imex-channels/channel<id>".
std::string ImexChannelNode(int id);

// The IMEX channels of `ids` (imex.channelIDs) whose node exists as a
// character device under `dev_root` or, as NVIDIA also accepts, at the
// plain path; in the given order. A missing channel is skipped, or with
// `required` (imex.required) FailedPrecondition naming it.
absl::StatusOr<std::vector<int>> PresentImexChannels(
    const std::string& dev_root, const std::vector<int>& ids, bool required);

}  // namespace gpulet::device
