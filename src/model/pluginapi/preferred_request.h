// Validation of one container's GetPreferredAllocation request, and of a
// policy's answer to it. Shared by the gRPC server (HandlePreferred) and by
// policies that are also called directly (SimplePreferred).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/model/pluginapi/device.h"

namespace gpulet::pluginapi {

// A request after validation: IDs unique (first occurrence kept), all known.
struct PreferredRequest {
  std::vector<std::string> available;
  std::vector<std::string> must_include;
  int size = 0;
};

// INVALID_ARGUMENT naming the ID or field when: size < 1; an available ID is
// not in the snapshot ("unknown device: <id>"); a must_include ID is not
// available; must_include holds more IDs than size; size exceeds the number
// of available devices. Duplicates are dropped, not rejected: the kubelet
// only uses the answer as a hint.
absl::StatusOr<PreferredRequest> ValidatePreferred(
    const DeviceSnapshot& snapshot, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size);

// INTERNAL naming the ID unless `answer` holds exactly request.size distinct
// available IDs including every must_include ID: a policy bug must not
// reach the kubelet as a wrong allocation.
absl::Status CheckPreferredAnswer(const PreferredRequest& request,
                                  const std::vector<std::string>& answer);

}  // namespace gpulet::pluginapi
