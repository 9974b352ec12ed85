// HealthMonitor: watches the GPUs' NVML events (Xid, double- and single-bit
// ECC errors) on one background thread and reports which GPUs (or MIG
// devices) should be marked Unhealthy. What is fatal is decided by the pure
// policy in xid_policy.h (HealthEvent, MonitorOptions, ParseHealthEnv).
//
// Events are registered on full GPUs only; NVML reports a MIG device's
// errors on its parent, with the GPU/compute instance ids set, and the
// HealthEvent carries them. A GPU whose registration fails is reported
// unhealthy once, as NVIDIA's plugin does, except when the GPU does not
// support the events (NVML_ERROR_NOT_SUPPORTED or no event of the mask):
// it is then only left unmonitored, with a warning.
//
// The thread blocks in nvmlEventSetWait: with a timeout of 30 minutes while
// every GPU is healthy (no wake-up while idle), of one second while some GPU
// is unhealthy (each timeout is a probe round). A stop interrupts the wait
// with a signal (docs/health.md: NVML returns NVML_ERROR_TIMEOUT when an
// interrupt arrives), so Stop() takes milliseconds. A failure on one
// device degrades that device only; a failed wait (including
// NVML_ERROR_GPU_IS_LOST, on which NVIDIA's plugin marks every GPU
// unhealthy) is retried with backoff (100 ms doubling to 5 s), never turned
// into "everything unhealthy". Each GPU, or each MIG instance, is reported
// unhealthy at most once per monitor until it recovers; later fatal events
// for it are only logged at verbosity 1 (but restart its quiet period).
//
// Recovery (recovery_policy.h): at every one-second wait timeout (at least
// once a second while events keep arriving) the monitor probes each unhealthy
// registered GPU (nvmlDeviceGetUUID and nvmlDeviceGetMemoryInfo on its
// handle) and reports HealthEvent{healthy = true} for the whole GPU when the
// policy says it recovered, forgetting its earlier reports so a later fault
// is reported again. Time for the quiet period comes from options.clock.
// A GPU that could not be registered is unhealthy (a fault needing no
// reset); at every probe round it is registered again, and once that works
// it is probed and recovers like any other GPU.
//
// Reloads: a monitor lives across configuration reloads that keep the GPUs
// and the health options. When either changes, the daemon starts the next
// monitor with the previous one's CarryOver (Stop() returns it): the GPUs
// already reported unhealthy stay reported (no callback again) and their
// recovery state (quiet period start, reset requirement, lost-then-back
// progress) continues exactly where it was.
//
// Ownership: the monitor owns its NVML event set and thread; it borrows the
// Library. Thread safety: Start() and the destructor from the owning
// thread; the callback runs on the monitor's thread (never concurrently with
// itself) and must not block for long. The destructor stops the thread and
// joins it. Start() installs a do-nothing handler for SIGRTMIN+4, the
// signal that interrupts the wait, once per process.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/health/recovery_policy.h"
#include "src/gpu/health/xid_policy.h"
#include "src/gpu/nvml/library.h"

namespace gpulet::health {

// What one monitor hands to the next: the unhealthy reports it made (GPUs
// and MIG instances, by NVML index) and the GPUs' recovery states.
struct CarryOver {
  std::vector<HealthEvent> reported;
  std::vector<RecoveryState> recovery;
};

class HealthMonitor {
 public:
  using Callback = std::function<void(const HealthEvent&)>;

  // Registers for events on every GPU of `gpus` (looked up by UUID, or by
  // index when the UUID is empty) and starts the thread. Registration
  // failures are delivered through the callback, from the monitor's thread,
  // before any event. With options.disabled, or no GPU, no NVML call is made
  // and no thread is started.
  // Errors: the NVML event set cannot be created (the status names
  // nvmlEventSetCreate).
  // REQUIRES: lib is initialised and outlives the monitor.
  // `seed`: state carried over from an earlier monitor (or GPUs the caller
  // already knows to be unhealthy): its reports are not delivered again, and
  // its GPUs are probed for recovery from the state given.
  static absl::StatusOr<std::unique_ptr<HealthMonitor>> Start(
      nvml::Library& lib, const std::vector<device::Gpu>& gpus,
      MonitorOptions options, Callback callback, CarryOver seed = {});

  // Stops the thread (no callback runs once it returns) and returns the
  // state for the next monitor. Idempotent.
  virtual CarryOver Stop() = 0;

  virtual ~HealthMonitor() = default;
};

}  // namespace gpulet::health
