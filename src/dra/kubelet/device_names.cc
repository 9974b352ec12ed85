#include "src/dra/kubelet/device_names.h"

#include <charconv>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace gpulet::dra {
namespace {

// Abseil here is built with its own string_view type, not std's.
constexpr absl::string_view kGpuPrefix = "gpu-";
constexpr absl::string_view kMigInfix = "mig";

// Canonical decimal only: the parse must be the exact inverse of StrCat.
bool ParseNumber(absl::string_view text, int& out) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && out >= 0;
}

absl::Status BadName(absl::string_view name) {
  return absl::InvalidArgumentError(
      absl::StrCat("device \"", name,
                   "\": not a gpulet DRA device name (want \"gpu-<index>\" or "
                   "\"gpu-<index>-mig-<profile>-<start>-<size>\")"));
}

}  // namespace

std::string GpuDeviceName(int gpu_index) {
  return absl::StrCat(kGpuPrefix, gpu_index);
}

std::string MigDeviceName(int parent_index, int profile_id, int placement_start,
                          int placement_size) {
  return absl::StrCat(kGpuPrefix, parent_index, "-", kMigInfix, "-", profile_id,
                      "-", placement_start, "-", placement_size);
}

absl::StatusOr<DeviceRef> ParseDeviceName(std::string_view std_name) {
  const absl::string_view name(std_name.data(), std_name.size());
  if (!absl::StartsWith(name, kGpuPrefix)) return BadName(name);
  std::vector<absl::string_view> parts =
      absl::StrSplit(name.substr(kGpuPrefix.size()), '-');
  DeviceRef ref;
  if (parts.size() == 1) {
    if (!ParseNumber(parts[0], ref.gpu_index)) return BadName(name);
    return ref;
  }
  if (parts.size() != 5 || parts[1] != kMigInfix ||
      !ParseNumber(parts[0], ref.gpu_index) ||
      !ParseNumber(parts[2], ref.profile_id) ||
      !ParseNumber(parts[3], ref.placement_start) ||
      !ParseNumber(parts[4], ref.placement_size) || ref.placement_size == 0) {
    return BadName(name);
  }
  ref.mig = true;
  return ref;
}

}  // namespace gpulet::dra
