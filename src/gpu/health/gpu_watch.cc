#include "src/gpu/health/gpu_watch.h"

#include <pthread.h>
#include <signal.h>

#include <cstdint>
#include <mutex>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/logging.h"
#include "src/gpu/device/nvml_error_kind.h"
#include "src/gpu/health/xid_policy.h"

namespace gpulet::health {
namespace {

void IgnoreWakeSignal(int /*signo*/) {}

}  // namespace

absl::StatusOr<nvml::Device> RegisterGpu(nvml::Library& lib,
                                         nvml::EventSet& events,
                                         const device::Gpu& gpu) {
  absl::StatusOr<nvml::Device> handle =
      gpu.uuid.empty() ? lib.DeviceGetHandleByIndex(gpu.index)
                       : lib.DeviceGetHandleByUuid(gpu.uuid);
  if (!handle.ok()) return handle.status();
  absl::StatusOr<uint64_t> supported =
      lib.DeviceGetSupportedEventTypes(*handle);
  absl::Status status = supported.status();
  if (supported.ok()) {
    const uint64_t mask = kHealthEventMask & *supported;
    if (mask == 0) {
      GPULET_LOG(WARNING) << "GPU " << gpu.index
                          << " supports none of the Xid and ECC events; its "
                             "health is not monitored";
      return nvml::Device{nullptr};
    }
    status = events.Register(*handle, mask);
  }
  if (device::IsNvmlUnsupported(status)) {
    GPULET_LOG(WARNING) << "GPU " << gpu.index
                        << " does not support health events (" << status
                        << "); its health is not monitored";
    return nvml::Device{nullptr};
  }
  if (!status.ok()) return status;
  return *handle;
}

Registration RegisterAll(nvml::Library& lib, nvml::EventSet& events,
                         const std::vector<device::Gpu>& gpus) {
  Registration registration;
  for (const device::Gpu& gpu : gpus) {
    absl::StatusOr<nvml::Device> handle = RegisterGpu(lib, events, gpu);
    if (!handle.ok()) {
      HealthEvent failure;
      failure.gpu_index = static_cast<int>(gpu.index);
      failure.reason = absl::StrCat("cannot watch it for health events: ",
                                    handle.status().message());
      failure.cause = HealthCause::kWatchFailed;
      registration.failures.push_back(std::move(failure));
      registration.failed.push_back(gpu);
    } else if (*handle != nullptr) {
      registration.gpus.emplace(*handle, static_cast<int>(gpu.index));
    }
  }
  return registration;
}

int WakeSignal() { return SIGRTMIN + 4; }

void InstallWakeSignalHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = IgnoreWakeSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    if (sigaction(WakeSignal(), &action, nullptr) != 0) {
      GPULET_LOG(WARNING) << "cannot install the health monitor's wake-up "
                             "signal handler; a stop may wait for the NVML "
                             "wait to time out";
    }
  });
}

void UnblockWakeSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, WakeSignal());
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

ProbeResult ProbeGpu(nvml::Library& lib, nvml::Device handle, int gpu) {
  absl::Status status = lib.DeviceGetUuid(handle).status();
  if (status.ok()) {
    status = lib.DeviceGetMemoryInfo(handle).status();
    if (device::IsNvmlUnsupported(status) ||
        device::IsNvmlNoPermission(status)) {
      status = absl::OkStatus();
    }
  }
  if (status.ok()) return ProbeResult::kOk;
  GPULET_VLOG(1) << "probing unhealthy GPU " << gpu << ": " << status;
  return absl::IsUnavailable(status) ? ProbeResult::kLost
                                     : ProbeResult::kFailed;
}

}  // namespace gpulet::health
