// SimState: the run-time state of the NVML simulator behind the exported C
// entry points — initialisation count, the loaded machine, handle objects,
// lost GPUs, event sets and injected faults.
//
// Lifecycle. nvmlInit* moves the count 0 -> 1 by loading the machine named by
// $GPULET_SIM_MACHINE (a built-in profile or a YAML path; default
// "dgx-h100") through the injected MachineLoader; every full shutdown lets
// the next init re-read the variable, so one process can switch machines.
// Fault state (lost GPUs by UUID, pending wait errors, counters) survives
// init cycles: a GPU that fell off the bus stays lost until `restore`.
//
// Validation order for every call, as NVML documents it: UNINITIALIZED,
// then INVALID_ARGUMENT for handles this simulator did not hand out (or that
// name a position the current machine lacks), then GPU_IS_LOST, then the
// call's own checks inside the callback.
//
// Thread safety: every public method may be called from any thread. One
// mutex guards all state; each event set has a condition variable on it.
// Callbacks given to the With*() methods run with the mutex held and must not
// call back into SimState.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sim/control_protocol.h"
#include "sim/event_queue.h"
#include "sim/handle_table.h"
#include "sim/machine.h"
#include "src/base/common/unique_fd.h"
#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::sim {

inline constexpr char kMachineEnv[] = "GPULET_SIM_MACHINE";
inline constexpr char kDefaultMachine[] = "dgx-h100";
inline constexpr unsigned int kNoInstance = 0xFFFFFFFF;
inline constexpr unsigned long long kXidGpuLost = 79;

// A device's position in the machine: a GPU, or one of its MIG devices.
struct DevicePosition {
  int gpu = 0;
  int mig = -1;  // index into Gpu::mig_devices, or -1 for the GPU itself
};

// What a callback sees of a device handle (a full GPU or a MIG device).
struct DeviceView {
  const Machine& machine;
  const Gpu& gpu;
  int gpu_index;
  const MigDevice* mig;  // nullptr for a full GPU
  HandleTable& handles;
};

struct GpuInstanceView {
  const Gpu& gpu;
  int gpu_index;
  const MigDevice& first;  // a MIG device of this instance (id, placement)
  const GpuInstanceProfile& profile;
  HandleTable& handles;
};

struct ComputeInstanceView {
  const Gpu& gpu;
  int gpu_index;
  const MigDevice& mig;
  const GpuInstanceProfile& gi_profile;
  const ComputeInstanceProfile& ci_profile;
  HandleTable& handles;
};

class SimState {
 public:
  using MachineLoader =
      std::function<absl::StatusOr<Machine>(const std::string& spec)>;

  explicit SimState(MachineLoader loader);
  SimState(const SimState&) = delete;
  SimState& operator=(const SimState&) = delete;

  // nvmlInitWithFlags; `*first` (optional) is set when this call moved the
  // count from 0 to 1.
  nvmlReturn_t Init(unsigned int flags, bool* first = nullptr);
  nvmlReturn_t Shutdown();
  // nvmlErrorString: for NVML_ERROR_UNKNOWN after a failed machine load,
  // "Unknown Error: <loader message>". The pointer stays valid forever.
  const char* ErrorString(unsigned int code);

  // Run `fn` under the lock once the common checks passed.
  using MachineFn =
      absl::FunctionRef<nvmlReturn_t(const Machine&, HandleTable&)>;
  using DeviceFn = absl::FunctionRef<nvmlReturn_t(const DeviceView&)>;
  using PairFn =
      absl::FunctionRef<nvmlReturn_t(const DeviceView&, const DeviceView&)>;
  using GpuInstanceFn = absl::FunctionRef<nvmlReturn_t(const GpuInstanceView&)>;
  using ComputeInstanceFn =
      absl::FunctionRef<nvmlReturn_t(const ComputeInstanceView&)>;
  nvmlReturn_t WithMachine(MachineFn fn);
  // Device lookup (by index, UUID, bus ID): `find` returns NVML_SUCCESS and a
  // position, or the error to report. Adds the null-pointer and GPU_IS_LOST
  // checks and hands out the position's handle.
  using FindFn =
      absl::FunctionRef<nvmlReturn_t(const Machine&, DevicePosition*)>;
  nvmlReturn_t LookupDevice(FindFn find, nvmlDevice_t* device);
  nvmlReturn_t WithDevice(nvmlDevice_t device, DeviceFn fn);
  nvmlReturn_t WithDevicePair(nvmlDevice_t a, nvmlDevice_t b, PairFn fn);
  nvmlReturn_t WithGpuInstance(nvmlGpuInstance_t instance, GpuInstanceFn fn);
  nvmlReturn_t WithComputeInstance(nvmlComputeInstance_t instance,
                                   ComputeInstanceFn fn);

  // Events (sim_events.cc). WaitEvent fills the whole current
  // nvmlEventData_t; callers of the v1 symbol copy out its older prefix.
  nvmlReturn_t CreateEventSet(nvmlEventSet_t* set);
  nvmlReturn_t RegisterEvents(nvmlDevice_t device, unsigned long long types,
                              nvmlEventSet_t set);
  nvmlReturn_t WaitEvent(nvmlEventSet_t set, unsigned int timeout_ms,
                         nvmlEventData_t* data);
  nvmlReturn_t FreeEventSet(nvmlEventSet_t set);

  // Control channel (sim_control.cc): executes one request line and returns
  // the reply as written on the wire ("ok\n..." or "error ...\n").
  std::string HandleControlLine(const std::string& line);

 private:
  struct EventSetObject {
    explicit EventSetObject(common::UniqueFd doorbell_fd)
        : doorbell(std::move(doorbell_fd)) {}
    // Makes the doorbell readable: waiters look at the set again.
    void Ring() const;
    // Makes it unreadable again; only when a waiter found nothing to do.
    void Quiet() const;

    EventQueue queue;
    std::map<int, unsigned long long> registrations;  // gpu->mask
    // An eventfd, rung when an event is queued, the set is freed or a wait
    // error is pending. Waiters poll() it with mu_ released, so a signal
    // interrupts their wait as it interrupts the driver's (which returns
    // NVML_ERROR_TIMEOUT when "an interrupt arrived").
    const common::UniqueFd doorbell;
    bool freed = false;
  };
  // What the event sets and waits did, reported by `status`.
  struct Counters {
    uint64_t events_injected = 0;
    uint64_t events_queued = 0;
    uint64_t events_unrouted = 0;
    uint64_t events_dropped = 0;
    uint64_t events_delivered = 0;
    uint64_t wait_errors_returned = 0;
    uint64_t waits_interrupted = 0;
  };
  struct Target {  // a resolved <gpu> token of a control command
    int gpu = 0;
    unsigned int gi = kNoInstance;
    unsigned int ci = kNoInstance;
  };

  bool initialized() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return init_count_ > 0 && machine_.has_value();
  }
  nvmlReturn_t LoadMachine(unsigned int flags)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FreeAllEventSets() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // INVALID_ARGUMENT unless `device` is a live device handle; GPU_IS_LOST
  // when its GPU is lost. On success *gpu/*mig name it (mig may be null).
  nvmlReturn_t ResolveDevice(nvmlDevice_t device, int* gpu,
                             const MigDevice** mig)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool IsLost(int gpu) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One look at `set` for WaitEvent: the result to return, or nullopt to
  // keep waiting. Finds the set on the first call (`object` is null) and
  // keeps it in `object` for the next.
  std::optional<nvmlReturn_t> TakeEvent(nvmlEventSet_t set,
                                        nvmlEventData_t* data,
                                        absl::Time deadline,
                                        std::shared_ptr<EventSetObject>& object)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  EventSetObject* FindEventSet(nvmlEventSet_t set)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues an event on every set registered for `gpu` and `type`.
  void Deliver(const SimEvent& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WakeAllWaiters() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::StatusOr<Target> ResolveTarget(const std::string& token) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::string> Execute(const ControlCommand& command)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string StatusJson() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const MachineLoader loader_;

  mutable absl::Mutex mu_;
  int init_count_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t init_cycles_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<Machine> machine_ ABSL_GUARDED_BY(mu_);
  HandleTable handles_ ABSL_GUARDED_BY(mu_);
  // Texts returned by ErrorString are kept forever: a caller may hold the
  // pointer while another init replaces the message.
  std::deque<std::string> error_texts_ ABSL_GUARDED_BY(mu_);
  const char* unknown_error_text_ ABSL_GUARDED_BY(mu_) = nullptr;

  std::set<std::string> lost_uuids_ ABSL_GUARDED_BY(mu_);
  std::map<const void*, std::shared_ptr<EventSetObject>> event_sets_
      ABSL_GUARDED_BY(mu_);
  nvmlReturn_t wait_error_code_ ABSL_GUARDED_BY(mu_) = NVML_SUCCESS;
  unsigned int wait_error_remaining_ ABSL_GUARDED_BY(mu_) = 0;

  Counters counters_ ABSL_GUARDED_BY(mu_);
  // The timeouts (ms) of the nvmlEventSetWait calls blocked right now.
  std::multiset<unsigned int> blocked_waits_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::sim
