#include "src/gpu/device/device_nodes.h"

#include <sys/stat.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gpulet::device {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool IsCharDevice(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

}  // namespace

std::string JoinRoot(const std::string& root, const std::string& path) {
  const std::string joined =
      root.empty() ? path : (path.empty() ? root : root + "/" + path);
  if (joined.empty()) return joined;
  const bool absolute = !joined.empty() && joined.front() == '/';
  std::vector<absl::string_view> parts;
  for (absl::string_view part : absl::StrSplit(joined, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..") {
        parts.pop_back();
      } else if (!absolute) {
        parts.push_back(part);
      }
      continue;
    }
    parts.push_back(part);
  }
  std::string cleaned = absl::StrJoin(parts, "/");
  if (absolute) return absl::StrCat("/", cleaned);
  return cleaned.empty() ? std::string(".") : cleaned;
}

std::vector<std::string> PresentControlNodes(const std::string& root) {
  std::vector<std::string> present;
  for (const char* node : kControlNodes) {
    if (Exists(JoinRoot(root, node))) present.emplace_back(node);
  }
  return present;
}

std::string GpuDeviceNode(unsigned minor) {
  return absl::StrCat("/dev/nvidia", minor);
}

std::string ImexChannelNode(int id) {
  return absl::StrCat(kImexChannelDir, "/channel", id);
}

absl::StatusOr<std::vector<int>> PresentImexChannels(
    const std::string& dev_root, const std::vector<int>& ids, bool required) {
  std::vector<int> present;
  for (int id : ids) {
    const std::string path = ImexChannelNode(id);
    const std::string host_path = JoinRoot(dev_root, path);
    if (IsCharDevice(host_path) || (host_path != path && IsCharDevice(path))) {
      present.push_back(id);
      continue;
    }
    if (required) {
      return absl::FailedPreconditionError(absl::StrCat(
          "requested IMEX channel channel", id,
          " does not exist: no character "
          "device at ",
          host_path,
          host_path != path ? absl::StrCat(" or ", path) : std::string()));
    }
  }
  return present;
}

}  // namespace gpulet::device
