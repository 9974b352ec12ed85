// The methods DraServer serves, as h2::Services (src/net/h2): plugin
// registration (GetInfo, NotifyRegistrationStatus) on the registration
// socket; the DRA service in its v1 and v1beta1 versions
// (NodePrepareResources, NodeUnprepareResources, one template over the two
// generated message sets, which differ only in Device.share_id) and the DRA
// health service (v1alpha1 NodeWatchResources) on the DRA socket. Internal
// to src/dra/kubelet.
//
// Thread safety: the methods run on their server's loop thread; state lives
// in the ClaimPreparer and the DeviceHealthBoard, which are thread-safe.
// A prepare that reads its claims from the API server blocks that loop for
// as long (health streams on the same socket wait for it; see docs/dra.md).
#pragma once

#include <functional>
#include <string>

#include "src/dra/kubelet/claim_preparer.h"
#include "src/dra/kubelet/device_health.h"
#include "src/net/h2/server.h"
#include "src/net/h2/service.h"

namespace gpulet::dra {

// GetInfo answers type "DRAPlugin", `driver`, `endpoint` (the DRA socket)
// and the versions "v1.DRAPlugin", "v1beta1.DRAPlugin"; each verdict the
// kubelet sends is logged and passed to `on_status` (may be empty).
h2::Service RegistrationMethods(
    std::string driver, std::string endpoint,
    std::function<void(bool, const std::string&)> on_status);

// DRA v1, v1beta1 and health. The health streams send every device the
// board knows first, then each change; `server` (which serves the result)
// is woken through WakeStreams by the caller's board subscription.
// REQUIRES: `preparer` and `board` outlive the server's run.
h2::Service DraMethods(ClaimPreparer& preparer, DeviceHealthBoard& board,
                       std::string pool);

}  // namespace gpulet::dra
