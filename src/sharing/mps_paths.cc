#include "src/sharing/mps_paths.h"

#include "absl/strings/str_cat.h"

namespace gpulet::sharing {
namespace {

std::string_view Trimmed(std::string_view root) {
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  return root == "/" ? std::string_view() : root;
}

}  // namespace

std::string MpsHostPipeDir(std::string_view mps_root, std::string_view uuid) {
  return std::string(Trimmed(mps_root)) + "/" + std::string(uuid) + "/pipe";
}

std::string MpsHostLogDir(std::string_view mps_root, std::string_view uuid) {
  return std::string(Trimmed(mps_root)) + "/" + std::string(uuid) + "/log";
}

std::string MpsContainerPipeDir(std::string_view uuid) {
  return "/mps/" + std::string(uuid) + "/pipe";
}

std::string MpsHostShmDir(std::string_view mps_root) {
  return std::string(Trimmed(mps_root)) + "/shm";
}

std::string MpsPinnedMemLimit(int64_t mib) {
  return absl::StrCat("0=", mib, "M");
}

int MpsActiveThreadPercentage(int64_t units, int64_t gpu_units) {
  if (gpu_units <= 0 || units >= gpu_units) return 100;
  if (units <= 0) return 1;
  return static_cast<int>((100 * units + gpu_units - 1) / gpu_units);
}

}  // namespace gpulet::sharing
