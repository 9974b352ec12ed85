#include "src/plugin/allocate_response.h"

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpulet::plugin {

absl::StatusOr<v1beta1::ContainerAllocateResponse> EnvvarResponse(
    const DeviceSnapshot& snapshot, const std::vector<std::string>& ids) {
  std::vector<std::string> visible;
  absl::flat_hash_set<std::string> seen;
  for (const std::string& id : ids) {
    const Device* device = snapshot.Find(id);
    if (device == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown device: ", id));
    }
    const std::string& name =
        device->visible_id.empty() ? device->id : device->visible_id;
    if (seen.insert(name).second) visible.push_back(name);
  }
  v1beta1::ContainerAllocateResponse response;
  (*response.mutable_envs())[kVisibleDevicesEnv] = absl::StrJoin(visible, ",");
  return response;
}

}  // namespace gpulet::plugin
