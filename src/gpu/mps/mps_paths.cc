#include "src/gpu/mps/mps_paths.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace gpulet::sharing {
namespace {

std::string_view Trimmed(std::string_view root) {
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  return root == "/" ? std::string_view() : root;
}

}  // namespace

absl::Status CheckMpsKey(std::string_view key) {
  bool ok = !key.empty() && key.size() <= 128;
  for (char c : key) {
    ok = ok && (absl::ascii_isalnum(c) || c == '-' || c == '_');
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("MPS daemon key \"", absl::CHexEscape(std::string(key)),
                   "\" is not 1-128 letters, digits, '-' and '_'"));
}

std::string MpsHostDir(std::string_view mps_root, std::string_view key) {
  return std::string(Trimmed(mps_root)) + "/" + std::string(key);
}

std::string MpsHostPipeDir(std::string_view mps_root, std::string_view key) {
  return MpsHostDir(mps_root, key) + "/pipe";
}

std::string MpsHostLogDir(std::string_view mps_root, std::string_view key) {
  return MpsHostDir(mps_root, key) + "/log";
}

std::string MpsHostShmDir(std::string_view mps_root, std::string_view key) {
  return MpsHostDir(mps_root, key) + "/shm";
}

std::string MpsContainerPipeDir(std::string_view key) {
  return "/mps/" + std::string(key) + "/pipe";
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
