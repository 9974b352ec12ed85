// The methods DraServer serves, as h2::Services (src/net/h2): plugin
// registration (GetInfo, NotifyRegistrationStatus) on the registration
// socket; the DRA service in its v1 and v1beta1 versions
// (NodePrepareResources, NodeUnprepareResources, one template over the two
// generated message sets, which differ only in Device.share_id) and the DRA
// health service (v1alpha1 NodeWatchResources) on the DRA socket. Internal
// to src/dra/kubelet.
//
// Thread safety: the methods run on their server's loop thread, except
// NodePrepareResources and NodeUnprepareResources, whose work runs on the
// CallWorkers given, with a stop token requested at the call's deadline
// less a margin (see docs/dra.md); state lives in the ClaimPreparer and
// the DeviceHealthBoard, which are thread-safe.
#pragma once

#include <functional>
#include <string>

#include "src/dra/kubelet/claim_preparer.h"
#include "src/dra/kubelet/device_health.h"
#include "src/net/h2/call_workers.h"
#include "src/net/h2/server.h"
#include "src/net/h2/service.h"

namespace gpulet::dra {

// GetInfo answers type "DRAPlugin", `driver`, `endpoint` (the DRA socket)
// and the versions "v1.DRAPlugin", "v1beta1.DRAPlugin"; each verdict the
// kubelet sends is logged and passed to `on_status` (may be empty).
h2::Service RegistrationMethods(
    std::string driver, std::string endpoint,
    std::function<void(bool, const std::string&)> on_status);

// The workers of the DRA socket: the kubelet prepares a pod's claims in
// one call, pods one after another, so two threads are plenty.
inline constexpr int kDraWorkers = 2;
inline constexpr size_t kDraMaxQueued = 16;

// DRA v1, v1beta1 and health. The health streams send every device the
// board knows first, then each change; `server` (which serves the result)
// is woken through WakeStreams by the caller's board subscription. A
// prepare whose claim could not be read before the call's time was up is
// DEADLINE_EXCEEDED naming the claims (the others' answers are in the
// checkpoint for the kubelet's retry); other claim errors travel in the
// response, each with its claim.
// REQUIRES: `preparer`, `board` and `workers` outlive the server's run,
// and `workers` is stopped before `preparer` goes.
h2::Service DraMethods(ClaimPreparer& preparer, DeviceHealthBoard& board,
                       std::string pool, h2::CallWorkers& workers);

}  // namespace gpulet::dra
