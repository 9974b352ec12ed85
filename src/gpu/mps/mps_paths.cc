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

std::string MpsReplicaKey(std::string_view replica_id) {
  const size_t at = replica_id.rfind("::");
  if (at == std::string_view::npos) return "";
  return std::string(replica_id.substr(0, at));
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

std::string MpsMemLimitValue(int64_t mib) { return absl::StrCat(mib, "M"); }

std::string MpsPinnedMemLimit(int64_t mib) {
  return absl::StrCat("0=", MpsMemLimitValue(mib));
}

std::string MpsSetDefaultActiveThreadPercentage(int percentage) {
  return absl::StrCat("set_default_active_thread_percentage ", percentage);
}

std::string MpsSetDefaultPinnedMemLimit(std::string_view device, int64_t mib) {
  return absl::StrCat("set_default_device_pinned_mem_limit ",
                      std::string(device), " ", MpsMemLimitValue(mib));
}

int MpsActiveThreadPercentage(int64_t units, int64_t gpu_units) {
  if (gpu_units <= 0 || units >= gpu_units) return 100;
  if (units <= 0) return 1;
  return static_cast<int>((100 * units + gpu_units - 1) / gpu_units);
}

int64_t MpsReplicaPinnedMemMib(uint64_t memory_bytes, int replicas) {
  const uint64_t n = replicas < 1 ? 1 : static_cast<uint64_t>(replicas);
  return static_cast<int64_t>(memory_bytes / n / 1024 / 1024);
}

int MpsReplicaThreadPercentage(int replicas) {
  return 100 / (replicas < 1 ? 1 : replicas);
}

std::vector<std::string> MpsReplicaLimitCommands(uint64_t memory_bytes,
                                                 int replicas) {
  std::vector<std::string> commands;
  const int64_t mib = MpsReplicaPinnedMemMib(memory_bytes, replicas);
  if (mib > 0) commands.push_back(MpsSetDefaultPinnedMemLimit("0", mib));
  commands.push_back(MpsSetDefaultActiveThreadPercentage(
      MpsReplicaThreadPercentage(replicas)));
  return commands;
}

}  // namespace gpulet::sharing
