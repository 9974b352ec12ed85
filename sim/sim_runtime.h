// The simulator library's process-wide objects: the one SimState every
// exported nvml* function uses, and the control server.
//
// The SimState is created on first use and intentionally never destroyed:
// other threads of the host program may still be inside an NVML call while
// static destructors run at exit. The control server is owned by a static
// object whose destructor stops and joins its thread when the library is
// unloaded (the library is linked with -z nodelete, so that is at process
// exit: Go's NVML binding dlcloses the library at every full nvmlShutdown,
// and fault state must survive that).
//
// Thread safety: both functions may be called from any thread.
#pragma once

#include "sim/sim_state.h"

namespace gpulet::sim {

inline constexpr char kSocketEnv[] = "GPULET_SIM_SOCKET";

SimState& State();

// Runs fn on a full GPU's view; MIG handles get NVML_ERROR_NOT_SUPPORTED, as
// NVML answers for calls that only make sense on a physical GPU.
template <typename Fn>
nvmlReturn_t WithGpu(nvmlDevice_t device, Fn fn) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    return d.mig != nullptr ? NVML_ERROR_NOT_SUPPORTED : fn(d);
  });
}

// Called after an nvmlInit that moved the count from 0 to 1. If
// $GPULET_SIM_SOCKET names a path other than the one served, (re)starts the
// control server there; if another live simulator owns the path, warns on
// stderr and runs without. An unset variable leaves a running server alone.
void ConfigureControlChannel();

}  // namespace gpulet::sim
