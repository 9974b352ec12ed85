// DynamicLibrary: the production nvml::Library, backed by libnvidia-ml.so.1
// loaded with dlopen (RTLD_NOW | RTLD_LOCAL). The only code in gpulet that
// calls dlopen/dlsym.
//
// OpenLibrary() finds the library like NVIDIA's plugin does
// (library_search.h), loads it and resolves every symbol once:
//   - required (load fails without them, naming the symbol and the file):
//     nvmlInit_v2 (or nvmlInit), nvmlShutdown, nvmlErrorString,
//     nvmlDeviceGetCount_v2 (or unversioned), nvmlDeviceGetHandleByIndex_v2
//     (or unversioned);
//   - everything else optional: the newest version present is used
//     (nvmlDeviceGetPciInfo_v3 -> _v2 -> unversioned, ...), and a method whose
//     function is absent returns Unimplemented("NVML function nvmlX is not
//     available in <path>").
// Errors name the NVML symbol actually called and the device
// (nvml_status.h). The description is computed only on failure: "GPU <i>"
// from nvmlDeviceGetIndex, else the UUID (MIG handles), else how the handle
// was obtained (GPU index or parent + MIG index, remembered when handed out,
// since a lost GPU answers neither), else the pointer.
//
// Ownership: the DynamicLibrary owns the dlopen handle. Its destructor calls
// nvmlShutdown once for every Init() not yet matched by Shutdown(), then
// dlclose. Handles and EventSets obtained from it must not outlive it.
// Several DynamicLibrary objects may load the same file; dlopen then shares
// one copy, and NVML's own reference count keeps them independent.
//
// Thread safety: every method may be called from any thread (NVML is
// thread-safe); Init/Shutdown are serialised by an internal mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "src/gpu/nvml/library.h"
#include "src/gpu/nvml/library_search.h"
#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::nvml {

// Searches, loads and resolves NVML. NotFound when no candidate file exists
// (or the dynamic linker finds none); FailedPrecondition when a file was
// found but could not be loaded or is not NVML. The message names every
// path searched and the dlerror()/missing symbol of every attempt.
absl::StatusOr<LibraryPtr> OpenLibrary(const LoadOptions& options);
// Same, with the file-existence check injected (tests).
absl::StatusOr<LibraryPtr> OpenLibrary(const LoadOptions& options,
                                       const IsFileFn& is_file);

class DynamicEventSet;

class DynamicLibrary final : public Library {
  class PassKey {
    PassKey() = default;
    friend class DynamicLibrary;
  };

 public:
  // dlopens `path` (a file path, or a bare name for the dynamic linker's
  // search) and resolves the symbols. FailedPrecondition on any failure.
  static absl::StatusOr<std::unique_ptr<DynamicLibrary>> Load(
      const std::string& path);

  DynamicLibrary(PassKey, void* handle, std::string path);
  ~DynamicLibrary() override;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  absl::Status Init() override;
  absl::Status Shutdown() override;
  const std::string& Path() const override { return path_; }

  absl::StatusOr<std::string> SystemGetDriverVersion() override;
  absl::StatusOr<std::string> SystemGetNvmlVersion() override;
  absl::StatusOr<int> SystemGetCudaDriverVersion() override;

  absl::StatusOr<unsigned> DeviceGetCount() override;
  absl::StatusOr<Device> DeviceGetHandleByIndex(unsigned index) override;
  absl::StatusOr<Device> DeviceGetHandleByUuid(
      const std::string& uuid) override;
  absl::StatusOr<Device> DeviceGetHandleByPciBusId(
      const std::string& bus_id) override;
  absl::StatusOr<unsigned> DeviceGetIndex(Device device) override;

  absl::StatusOr<std::string> DeviceGetUuid(Device device) override;
  absl::StatusOr<std::string> DeviceGetName(Device device) override;
  absl::StatusOr<std::string> DeviceGetSerial(Device device) override;
  absl::StatusOr<unsigned> DeviceGetMinorNumber(Device device) override;
  absl::StatusOr<PciInfo> DeviceGetPciInfo(Device device) override;
  absl::StatusOr<MemoryInfo> DeviceGetMemoryInfo(Device device) override;
  absl::StatusOr<ComputeCapability> DeviceGetCudaComputeCapability(
      Device device) override;
  absl::StatusOr<nvmlBrandType_t> DeviceGetBrand(Device device) override;
  absl::StatusOr<nvmlDeviceArchitecture_t> DeviceGetArchitecture(
      Device device) override;
  absl::StatusOr<unsigned> DeviceGetNumaNodeId(Device device) override;
  absl::StatusOr<std::vector<unsigned>> DeviceGetCpuAffinity(
      Device device) override;
  absl::StatusOr<GpuFabricInfo> DeviceGetGpuFabricInfo(Device device) override;

  absl::StatusOr<MigMode> DeviceGetMigMode(Device device) override;
  absl::StatusOr<unsigned> DeviceGetMaxMigDeviceCount(Device device) override;
  absl::StatusOr<Device> DeviceGetMigDeviceHandleByIndex(
      Device device, unsigned index) override;
  absl::StatusOr<bool> DeviceIsMigDeviceHandle(Device device) override;
  absl::StatusOr<Device> DeviceGetDeviceHandleFromMigDeviceHandle(
      Device mig_device) override;
  absl::StatusOr<unsigned> DeviceGetGpuInstanceId(Device device) override;
  absl::StatusOr<unsigned> DeviceGetComputeInstanceId(Device device) override;
  absl::StatusOr<nvmlDeviceAttributes_t> DeviceGetAttributes(
      Device device) override;
  absl::StatusOr<GpuInstanceProfileInfo> DeviceGetGpuInstanceProfileInfo(
      Device device, unsigned profile) override;
  absl::StatusOr<GpuInstance> DeviceGetGpuInstanceById(Device device,
                                                       unsigned id) override;
  absl::StatusOr<GpuInstanceInfo> GpuInstanceGetInfo(
      GpuInstance gpu_instance) override;
  absl::StatusOr<ComputeInstanceProfileInfo>
  GpuInstanceGetComputeInstanceProfileInfo(GpuInstance gpu_instance,
                                           unsigned profile,
                                           unsigned engine_profile) override;
  absl::StatusOr<ComputeInstance> GpuInstanceGetComputeInstanceById(
      GpuInstance gpu_instance, unsigned id) override;
  absl::StatusOr<ComputeInstanceInfo> ComputeInstanceGetInfo(
      ComputeInstance compute_instance) override;

  absl::StatusOr<nvmlGpuTopologyLevel_t> DeviceGetTopologyCommonAncestor(
      Device a, Device b) override;
  absl::StatusOr<bool> DeviceGetNvLinkState(Device device,
                                            unsigned link) override;
  absl::StatusOr<PciInfo> DeviceGetNvLinkRemotePciInfo(Device device,
                                                       unsigned link) override;
  absl::StatusOr<nvmlIntNvLinkDeviceType_t> DeviceGetNvLinkRemoteDeviceType(
      Device device, unsigned link) override;
  absl::StatusOr<nvmlGpuP2PStatus_t> DeviceGetP2PStatus(
      Device a, Device b, nvmlGpuP2PCapsIndex_t index) override;

  absl::StatusOr<EventSetPtr> EventSetCreate() override;
  absl::StatusOr<uint64_t> DeviceGetSupportedEventTypes(Device device) override;

 private:
  friend class DynamicEventSet;

  // One resolved entry point: the pointer (null when absent) and the name of
  // the symbol it came from, which is the name errors report.
  template <typename Fn>
  struct Symbol {
    Fn fn = nullptr;
    const char* name = "";
  };
  struct Functions {
#define GPULET_NVML_SYMBOL_MEMBER(name, params) Symbol<decltype(&::name)> name;
    GPULET_NVML_FUNCTIONS(GPULET_NVML_SYMBOL_MEMBER)
#undef GPULET_NVML_SYMBOL_MEMBER
    Symbol<decltype(&::nvmlErrorString)> nvmlErrorString;
  };
  // What an error is about: nothing (system calls), one or two devices, a
  // GPU or compute instance.
  using DevicePair = std::pair<Device, Device>;
  struct GpuIndex {
    unsigned index;
  };
  // "<handle> <kind> <number>", e.g. "GPU 0 link 3".
  template <typename Handle>
  struct Item {
    Handle handle;
    const char* kind;
    unsigned number;
  };

  // How a device handle was obtained, remembered so an error can still name
  // the device when NVML no longer answers for it (a lost GPU fails
  // nvmlDeviceGetIndex and nvmlDeviceGetUUID too).
  struct Origin {
    Device parent;   // null for a full GPU
    unsigned index;  // GPU index, or MIG device index within `parent`
  };
  void Remember(Device device, Origin origin) const;

  void ResolveSymbols();
  // The first required symbol that is absent, or nullptr.
  const char* MissingRequiredSymbol() const;

  std::string Describe(std::nullptr_t) const { return ""; }
  // Calls about something not yet a handle ("GPU 3", a UUID, a bus ID).
  std::string Describe(const std::string& what) const { return what; }
  std::string Describe(Device device) const;
  std::string Describe(const DevicePair& devices) const;
  std::string Describe(GpuIndex gpu) const;
  template <typename Handle>
  std::string Describe(const Item<Handle>& item) const {
    return absl::StrCat(Describe(item.handle), " ", item.kind, " ",
                        item.number);
  }
  std::string Describe(GpuInstance gpu_instance) const;
  std::string Describe(ComputeInstance compute_instance) const;
  std::string ErrorString(nvmlReturn_t ret) const;
  // Unimplemented: `function` is not exported by this library.
  absl::Status Absent(const char* function) const;

  template <typename Subject>
  absl::Status Check(nvmlReturn_t ret, const char* function,
                     const Subject& subject) const {
    if (ret == NVML_SUCCESS) return absl::OkStatus();
    return Error(ret, function, Describe(subject));
  }
  absl::Status Error(nvmlReturn_t ret, const char* function,
                     const std::string& subject) const;

  // Calls `symbol` with `args`; Unimplemented when it is absent, else the
  // NVML result converted with `subject` as the device description.
  template <typename Fn, typename Subject, typename... Args>
  absl::Status Call(const Symbol<Fn>& symbol, const Subject& subject,
                    Args... args) const {
    if (symbol.fn == nullptr) return Absent(symbol.name);
    return Check(symbol.fn(args...), symbol.name, subject);
  }

  // A string out-parameter of NVML's documented buffer size:
  // fn(lead..., buffer, buffer_size).
  template <typename Fn, typename Subject, typename... Lead>
  absl::StatusOr<std::string> GetString(const Symbol<Fn>& symbol,
                                        const Subject& subject,
                                        unsigned buffer_size,
                                        Lead... lead) const {
    std::vector<char> buffer(buffer_size, '\0');
    absl::Status status =
        Call(symbol, subject, lead..., buffer.data(), buffer_size);
    if (!status.ok()) return status;
    buffer.back() = '\0';
    return std::string(buffer.data());
  }

  // A single unsigned out-parameter: fn(device, &value).
  template <typename Fn>
  absl::StatusOr<unsigned> GetUnsigned(const Symbol<Fn>& symbol,
                                       Device device) const {
    unsigned value = 0;
    absl::Status status = Call(symbol, device, device, &value);
    if (!status.ok()) return status;
    return value;
  }

  void* handle_;
  std::string path_;
  Functions fn_;
  absl::Mutex mu_;
  int init_count_ ABSL_GUARDED_BY(mu_) = 0;
  mutable absl::Mutex origins_mu_;
  mutable absl::flat_hash_map<Device, Origin> origins_
      ABSL_GUARDED_BY(origins_mu_);
};

}  // namespace gpulet::nvml
