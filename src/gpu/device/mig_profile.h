// MIG profile names exactly as NVIDIA spells them ("1g.5gb", "1c.2g.10gb",
// "1g.10gb+me"), so resource names such as nvidia.com/mig-1g.5gb match the
// ones NVIDIA's device plugin advertises for the same hardware.
//
// The rule is go-nvlib's: G = GPU instance slices, C = compute instance
// slices (omitted when equal to G), GB = the MIG memory as a fraction of the
// whole GPU rounded up to eighths, times the GPU memory in whole GiB (rounded
// up), rounded to the nearest integer. GPU instance profiles with media
// extensions add "+me", with all media engines "+me.all", with graphics
// "+gfx"; those without any media engine add "-me".
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpulet::device {

// Memory size in GB used in the profile name. `device_memory_bytes` is the
// parent GPU's total memory, `mig_memory_mb` the MIG device's memory (MiB,
// nvmlDeviceAttributes_t::memorySizeMB). 0 when device memory is 0.
uint64_t MigMemorySizeGb(uint64_t device_memory_bytes, uint64_t mig_memory_mb);

// "<G>g.<GB>gb" or "<C>c.<G>g.<GB>gb", plus "+<attr>,<attr>" when
// `attributes` is not empty; attributes spelt "-<attr>" are absences and
// print as "-<attr>" instead.
std::string MigProfileName(unsigned gi_slices, unsigned ci_slices,
                           uint64_t mig_memory_mb, uint64_t device_memory_bytes,
                           const std::vector<std::string>& attributes = {});

// Profile attributes implied by a GPU instance profile ID
// (NVML_GPU_INSTANCE_PROFILE_*, not the nvidia-smi ID): {"me"}, {"me.all"},
// {"gfx"} or {"-me"} for the profiles named so; empty for the rest.
std::vector<std::string> MigProfileAttributes(unsigned gi_profile_id);

}  // namespace gpulet::device
