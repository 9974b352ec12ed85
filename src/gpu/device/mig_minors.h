// MIG capability minors: which /dev/nvidia-caps/nvidia-cap<N> device node
// grants access to a GPU instance or compute instance. The NVIDIA driver
// lists them in /proc/driver/nvidia-caps/mig-minors, one per line:
//
//   config 1
//   monitor 2
//   gpu0/gi1/access 12
//   gpu0/gi1/ci0/access 13
//
// where "gpu<N>" is the GPU's device minor (/dev/nvidia<N>), not its NVML
// index. A container using a MIG device needs the parent GPU's node plus
// the GI and CI access nodes, exactly what NVIDIA's k8s-device-plugin
// passes with passDeviceSpecs (internal/mig GetMigCapabilityDevicePaths).
//
// ParseMigMinors is pure; LoadMigMinors reads the file under a root.
// Ownership: values only. Thread safety: stateless functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "src/gpu/device/gpu.h"

namespace gpulet::device {

inline constexpr char kMigMinorsPath[] = "/proc/driver/nvidia-caps/mig-minors";
inline constexpr char kNvidiaCapsDir[] = "/dev/nvidia-caps";

struct MigMinors {
  // (gpu minor, gpu instance ID) -> minor of that GI's access node.
  std::map<std::pair<unsigned, unsigned>, unsigned> gpu_instances;
  // (gpu minor, gpu instance ID, compute instance ID) -> minor of that
  // CI's access node.
  std::map<std::tuple<unsigned, unsigned, unsigned>, unsigned>
      compute_instances;
  std::optional<unsigned> config;   // "config <N>"
  std::optional<unsigned> monitor;  // "monitor <N>"
  // Non-empty lines in no known form, kept for a warning. NVIDIA skips them
  // too, so a newer driver adding entries does not break start-up.
  std::vector<std::string> skipped_lines;

  bool operator==(const MigMinors&) const = default;
};

// Parses the text of mig-minors. Never fails: unknown lines go to
// skipped_lines. A later line for the same capability wins.
MigMinors ParseMigMinors(std::string_view text);

// Reads <root>/proc/driver/nvidia-caps/mig-minors ("/" in production; a
// temp dir in tests). NotFound naming the path when the file is missing
// (no MIG-capable driver); other read errors as ReadFile gives them.
absl::StatusOr<MigMinors> LoadMigMinors(const std::string& root);

// "/dev/nvidia-caps/nvidia-cap<minor>".
std::string NvidiaCapNode(unsigned minor);

// The GI and CI access nodes of a MIG instance on the GPU with device
// minor `gpu_minor`, in that order. NotFound naming the missing
// capability ("gpu0/gi3/ci0/access") when mig-minors lacks it.
absl::StatusOr<std::vector<std::string>> MigCapNodes(
    const MigMinors& minors, unsigned gpu_minor, unsigned gpu_instance_id,
    unsigned compute_instance_id);

// Every device node a MIG device needs, in NVIDIA's order: the parent
// GPU's "/dev/nvidia<minor>", then the GI and CI access nodes. `parent` is
// the GPU the MIG device belongs to (its minor is used). Errors as
// MigCapNodes.
absl::StatusOr<std::vector<std::string>> MigDeviceNodes(const MigMinors& minors,
                                                        const Gpu& parent,
                                                        const MigDevice& mig);

}  // namespace gpulet::device
