// Loading, symbol resolution, error descriptions, Init/Shutdown, system and
// enumeration calls. Device queries live in dynamic_library_device.cc, MIG in
// dynamic_library_mig.cc, events in dynamic_library_events.cc.
#include "src/gpu/nvml/dynamic_library.h"

#include <dlfcn.h>
#include <link.h>

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "src/base/common/logging.h"
#include "src/gpu/nvml/nvml_status.h"

namespace gpulet::nvml {
namespace {

// Older versions of a call with the same signature stand in for a newer
// one that the library does not export. Errors then name the older symbol.
template <typename S>
void FallBack(S& slot, const S& older) {
  if (slot.fn == nullptr && older.fn != nullptr) slot = older;
}

std::string DlError(const std::string& path) {
  const char* error = ::dlerror();
  return error != nullptr ? error : absl::StrCat("dlopen(", path, ") failed");
}

bool IsBareName(const std::string& path) {
  return path.find('/') == std::string::npos;
}

// For a bare name, the file the dynamic linker found, so Path() names a real
// file. A path is kept as given: when the same file is already loaded under
// another name, dlopen returns that copy and its link map shows the old name.
std::string LoadedFile(void* handle, const std::string& requested) {
  struct link_map* map = nullptr;
  if (IsBareName(requested) && ::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 &&
      map != nullptr && map->l_name != nullptr && map->l_name[0] != '\0') {
    return map->l_name;
  }
  return requested;
}

}  // namespace

absl::StatusOr<LibraryPtr> OpenLibrary(const LoadOptions& options) {
  return OpenLibrary(options, IsRegularFile);
}

absl::StatusOr<LibraryPtr> OpenLibrary(const LoadOptions& options,
                                       const IsFileFn& is_file) {
  const SearchPlan plan = PlanLibrarySearch(options, is_file);
  const std::string searched = absl::StrJoin(plan.searched, ", ");
  if (plan.attempts.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "NVML library ", kNvmlLibraryName, " not found under driver root \"",
        options.driver_root, "\" (searched ", searched, ")"));
  }
  std::vector<std::string> failures;
  bool file_exists = false;
  for (const std::string& attempt : plan.attempts) {
    absl::StatusOr<std::unique_ptr<DynamicLibrary>> library =
        DynamicLibrary::Load(attempt);
    if (library.ok()) return LibraryPtr(std::move(*library));
    GPULET_VLOG(1) << library.status().message();
    failures.emplace_back(library.status().message());
    if (!IsBareName(attempt) && is_file(attempt)) file_exists = true;
  }
  const std::string message =
      options.library_path.empty()
          ? absl::StrCat("could not load NVML library \"", kNvmlLibraryName,
                         "\" (searched ", searched,
                         "): ", absl::StrJoin(failures, "; "))
          : absl::StrCat("could not load NVML library \"", options.library_path,
                         "\": ", failures.front());
  // A file that exists but will not load needs fixing, not more searching.
  return file_exists ? absl::FailedPreconditionError(message)
                     : absl::NotFoundError(message);
}

absl::StatusOr<std::unique_ptr<DynamicLibrary>> DynamicLibrary::Load(
    const std::string& path) {
  ::dlerror();
  // RTLD_LOCAL: NVML's symbols must not satisfy other libraries' lookups,
  // and two loaded copies (the simulator in tests) must not interpose.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return absl::FailedPreconditionError(DlError(path));
  auto library = std::make_unique<DynamicLibrary>(PassKey(), handle,
                                                  LoadedFile(handle, path));
  if (const char* missing = library->MissingRequiredSymbol()) {
    return absl::FailedPreconditionError(
        absl::StrCat(library->Path(), " is not an NVML library: required ",
                     "symbol ", missing, " is missing"));
  }
  return library;
}

DynamicLibrary::DynamicLibrary(PassKey, void* handle, std::string path)
    : handle_(handle), path_(std::move(path)) {
  ResolveSymbols();
}

DynamicLibrary::~DynamicLibrary() {
  {
    absl::MutexLock lock(&mu_);
    for (; init_count_ > 0; --init_count_) {
      if (fn_.nvmlShutdown.fn != nullptr) fn_.nvmlShutdown.fn();
    }
  }
  ::dlclose(handle_);
}

void DynamicLibrary::ResolveSymbols() {
#define GPULET_NVML_RESOLVE(symbol, params)                             \
  fn_.symbol = {                                                        \
      reinterpret_cast<decltype(&::symbol)>(::dlsym(handle_, #symbol)), \
      #symbol};
  GPULET_NVML_FUNCTIONS(GPULET_NVML_RESOLVE)
  GPULET_NVML_RESOLVE(nvmlErrorString, ())
#undef GPULET_NVML_RESOLVE

  FallBack(fn_.nvmlInit_v2, fn_.nvmlInit);
  FallBack(fn_.nvmlDeviceGetCount_v2, fn_.nvmlDeviceGetCount);
  FallBack(fn_.nvmlDeviceGetHandleByIndex_v2, fn_.nvmlDeviceGetHandleByIndex);
  FallBack(fn_.nvmlDeviceGetHandleByPciBusId_v2,
           fn_.nvmlDeviceGetHandleByPciBusId);
  FallBack(fn_.nvmlDeviceGetPciInfo_v3, fn_.nvmlDeviceGetPciInfo_v2);
  FallBack(fn_.nvmlDeviceGetPciInfo_v3, fn_.nvmlDeviceGetPciInfo);
  FallBack(fn_.nvmlDeviceGetAttributes_v2, fn_.nvmlDeviceGetAttributes);
  FallBack(fn_.nvmlComputeInstanceGetInfo_v2, fn_.nvmlComputeInstanceGetInfo);
  FallBack(fn_.nvmlEventSetWait_v2, fn_.nvmlEventSetWait);
  FallBack(fn_.nvmlDeviceGetNvLinkRemotePciInfo_v2,
           fn_.nvmlDeviceGetNvLinkRemotePciInfo);
  FallBack(fn_.nvmlSystemGetCudaDriverVersion_v2,
           fn_.nvmlSystemGetCudaDriverVersion);
}

const char* DynamicLibrary::MissingRequiredSymbol() const {
  if (fn_.nvmlInit_v2.fn == nullptr) return "nvmlInit_v2 (or nvmlInit)";
  if (fn_.nvmlShutdown.fn == nullptr) return "nvmlShutdown";
  if (fn_.nvmlErrorString.fn == nullptr) return "nvmlErrorString";
  if (fn_.nvmlDeviceGetCount_v2.fn == nullptr) {
    return "nvmlDeviceGetCount_v2 (or nvmlDeviceGetCount)";
  }
  if (fn_.nvmlDeviceGetHandleByIndex_v2.fn == nullptr) {
    return "nvmlDeviceGetHandleByIndex_v2 (or nvmlDeviceGetHandleByIndex)";
  }
  return nullptr;
}

// --------------------------------------------------------------- errors

std::string DynamicLibrary::Describe(Device device) const {
  if (device == nullptr) return "null device";
  // A MIG handle has no index of its own; its UUID is what users know.
  unsigned is_mig = 0;
  const bool mig =
      fn_.nvmlDeviceIsMigDeviceHandle.fn != nullptr &&
      fn_.nvmlDeviceIsMigDeviceHandle.fn(device, &is_mig) == NVML_SUCCESS &&
      is_mig != 0;
  unsigned index = 0;
  if (!mig && fn_.nvmlDeviceGetIndex.fn != nullptr &&
      fn_.nvmlDeviceGetIndex.fn(device, &index) == NVML_SUCCESS) {
    return absl::StrCat("GPU ", index);
  }
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  if (fn_.nvmlDeviceGetUUID.fn != nullptr &&
      fn_.nvmlDeviceGetUUID.fn(device, uuid, sizeof(uuid)) == NVML_SUCCESS) {
    uuid[sizeof(uuid) - 1] = '\0';
    if (uuid[0] != '\0') return uuid;
  }
  std::optional<Origin> origin;
  {
    absl::MutexLock lock(&origins_mu_);
    if (auto it = origins_.find(device); it != origins_.end()) {
      origin = it->second;
    }
  }
  if (origin.has_value() && origin->parent == nullptr) {
    return absl::StrCat("GPU ", origin->index);
  }
  if (origin.has_value() && origin->parent != device) {
    return Describe(Item<Device>{origin->parent, "MIG device", origin->index});
  }
  return absl::StrFormat("device %p", static_cast<const void*>(device));
}

void DynamicLibrary::Remember(Device device, Origin origin) const {
  absl::MutexLock lock(&origins_mu_);
  origins_.insert_or_assign(device, origin);
}

std::string DynamicLibrary::Describe(const DevicePair& devices) const {
  return absl::StrCat(Describe(devices.first), ", ", Describe(devices.second));
}

std::string DynamicLibrary::Describe(GpuIndex gpu) const {
  return absl::StrCat("GPU ", gpu.index);
}

std::string DynamicLibrary::Describe(GpuInstance gpu_instance) const {
  nvmlGpuInstanceInfo_t info = {};
  if (fn_.nvmlGpuInstanceGetInfo.fn != nullptr &&
      fn_.nvmlGpuInstanceGetInfo.fn(gpu_instance, &info) == NVML_SUCCESS) {
    return absl::StrCat(Describe(info.device), " GPU instance ", info.id);
  }
  return absl::StrFormat("GPU instance %p",
                         static_cast<const void*>(gpu_instance));
}

std::string DynamicLibrary::Describe(ComputeInstance compute_instance) const {
  nvmlComputeInstanceInfo_t info = {};
  if (fn_.nvmlComputeInstanceGetInfo_v2.fn != nullptr &&
      fn_.nvmlComputeInstanceGetInfo_v2.fn(compute_instance, &info) ==
          NVML_SUCCESS) {
    return absl::StrCat(Describe(info.gpuInstance), " compute instance ",
                        info.id);
  }
  return absl::StrFormat("compute instance %p",
                         static_cast<const void*>(compute_instance));
}

std::string DynamicLibrary::ErrorString(nvmlReturn_t ret) const {
  const char* text = fn_.nvmlErrorString.fn(ret);
  return text != nullptr ? text : "";
}

absl::Status DynamicLibrary::Error(nvmlReturn_t ret, const char* function,
                                   const std::string& subject) const {
  return NvmlStatus(ret, function, subject, ErrorString(ret));
}

absl::Status DynamicLibrary::Absent(const char* function) const {
  return absl::UnimplementedError(
      absl::StrCat("NVML function ", function, " is not available in ", path_));
}

// --------------------------------------------------------------- lifecycle

absl::Status DynamicLibrary::Init() {
  absl::MutexLock lock(&mu_);
  absl::Status status = Call(fn_.nvmlInit_v2, nullptr);
  if (status.ok()) ++init_count_;
  return status;
}

absl::Status DynamicLibrary::Shutdown() {
  absl::MutexLock lock(&mu_);
  if (init_count_ == 0) {
    // Calling NVML here would undo an Init() made by another user of the
    // same library in this process.
    return absl::FailedPreconditionError(
        absl::StrCat("nvmlShutdown: no Init() to match on ", path_));
  }
  absl::Status status = Call(fn_.nvmlShutdown, nullptr);
  if (status.ok()) --init_count_;
  if (init_count_ == 0) {
    // Handles die with the last shutdown; NVML may reuse their addresses.
    absl::MutexLock origins_lock(&origins_mu_);
    origins_.clear();
  }
  return status;
}

// --------------------------------------------------------------- system

absl::StatusOr<std::string> DynamicLibrary::SystemGetDriverVersion() {
  return GetString(fn_.nvmlSystemGetDriverVersion, nullptr,
                   NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE);
}

absl::StatusOr<std::string> DynamicLibrary::SystemGetNvmlVersion() {
  return GetString(fn_.nvmlSystemGetNVMLVersion, nullptr,
                   NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE);
}

absl::StatusOr<int> DynamicLibrary::SystemGetCudaDriverVersion() {
  int version = 0;
  absl::Status status =
      Call(fn_.nvmlSystemGetCudaDriverVersion_v2, nullptr, &version);
  if (!status.ok()) return status;
  return version;
}

// --------------------------------------------------------------- enumeration

absl::StatusOr<unsigned> DynamicLibrary::DeviceGetCount() {
  unsigned count = 0;
  absl::Status status = Call(fn_.nvmlDeviceGetCount_v2, nullptr, &count);
  if (!status.ok()) return status;
  return count;
}

absl::StatusOr<Device> DynamicLibrary::DeviceGetHandleByIndex(unsigned index) {
  Device device = nullptr;
  absl::Status status =
      Call(fn_.nvmlDeviceGetHandleByIndex_v2, GpuIndex{index}, index, &device);
  if (!status.ok()) return status;
  Remember(device, Origin{nullptr, index});
  return device;
}

absl::StatusOr<Device> DynamicLibrary::DeviceGetHandleByUuid(
    const std::string& uuid) {
  Device device = nullptr;
  absl::Status status =
      Call(fn_.nvmlDeviceGetHandleByUUID, uuid, uuid.c_str(), &device);
  if (!status.ok()) return status;
  return device;
}

absl::StatusOr<Device> DynamicLibrary::DeviceGetHandleByPciBusId(
    const std::string& bus_id) {
  Device device = nullptr;
  absl::Status status = Call(fn_.nvmlDeviceGetHandleByPciBusId_v2, bus_id,
                             bus_id.c_str(), &device);
  if (!status.ok()) return status;
  return device;
}

absl::StatusOr<unsigned> DynamicLibrary::DeviceGetIndex(Device device) {
  return GetUnsigned(fn_.nvmlDeviceGetIndex, device);
}

}  // namespace gpulet::nvml
