// EncodeListAndWatch: a device snapshot as the bytes of a serialized
// v1beta1.ListAndWatchResponse, written straight from the devices instead
// of through a message of one sub-message per device. On a node of 768
// replicas that is one buffer of about 47 KB instead of some 3,000
// allocations per update. The bytes equal what
// ToListAndWatchResponse(snapshot).SerializeAsString() gives (fields in
// number order, proto3 defaults left out), so the kubelet's parser sees the
// same message.
//
// Thread safety: a pure function.
#pragma once

#include <string>

#include "src/model/pluginapi/device.h"

namespace gpulet::plugin {

std::string EncodeListAndWatch(const pluginapi::DeviceSnapshot& snapshot);

}  // namespace gpulet::plugin
