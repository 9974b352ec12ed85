// Parsers for the two /proc files the NVIDIA driver publishes that CDI
// generation needs: /proc/driver/nvidia-caps/mig-minors (which
// /dev/nvidia-caps/nvidia-cap<N> guards which MIG GPU or compute instance)
// and /proc/devices (the dynamic character majors of nvidia-uvm and
// nvidia-caps). Text in, values out; reading the files is the caller's job.
//
// Thread safety: pure functions; MigMinors is a plain value.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpulet::cdi {

// NVIDIA's fixed character major of /dev/nvidia<minor>, nvidiactl (minor
// 255) and nvidia-modeset (minor 254).
inline constexpr int64_t kNvidiaMajor = 195;

class MigMinors {
 public:
  // Lines "<capability> <minor>", e.g. "gpu0/gi1/access 12" and
  // "gpu0/gi1/ci0/access 13", plus "config 1" / "monitor 2". The gpu
  // number is the GPU's minor, not its index. Blank lines are ignored;
  // anything else malformed is InvalidArgument naming the line.
  static absl::StatusOr<MigMinors> Parse(absl::string_view text);

  // The cap minor for a GPU instance / compute instance of the GPU with
  // minor `gpu_minor`; nullopt when the file does not list it.
  std::optional<unsigned> GpuInstance(unsigned gpu_minor, unsigned gi) const;
  std::optional<unsigned> ComputeInstance(unsigned gpu_minor, unsigned gi,
                                          unsigned ci) const;
  bool empty() const { return minors_.empty(); }

 private:
  std::optional<unsigned> Find(const std::string& capability) const;
  std::map<std::string, unsigned> minors_;
};

// The "Character devices:" section of /proc/devices as name -> major
// ("nvidia-caps" -> 238). Malformed lines are skipped: the file is the
// kernel's and its other sections do not concern gpulet.
std::map<std::string, int64_t> ParseProcDevices(absl::string_view text);

}  // namespace gpulet::cdi
