#include "src/model/allocation/allocate_response.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "src/gpu/mps/mps_paths.h"
#include "src/model/allocation/allocate_cdi.h"

namespace gpulet::allocation {

using pluginapi::AllocateHandler;
using pluginapi::Device;
using pluginapi::DeviceSnapshot;
namespace {

// Go's filepath.Join(root, path), which NVIDIA uses for host paths.
std::string JoinPath(const std::string& root, const std::string& path) {
  const std::string joined = root.empty() ? path : root + "/" + path;
  const bool absolute = !joined.empty() && joined.front() == '/';
  std::vector<absl::string_view> parts;
  for (absl::string_view part : absl::StrSplit(joined, '/')) {
    if (part.empty() || part == ".") continue;
    if (part != "..") {
      parts.push_back(part);
    } else if (!parts.empty() && parts.back() != "..") {
      parts.pop_back();
    } else if (!absolute) {
      parts.push_back(part);
    }
  }
  return absl::StrCat(absolute ? "/" : "", absl::StrJoin(parts, "/"));
}

bool Includes(const AllocateOptions& o, DeviceListStrategy s) {
  return std::find(o.strategies.begin(), o.strategies.end(), s) !=
         o.strategies.end();
}

bool IsCdi(DeviceListStrategy s) {
  return s == DeviceListStrategy::kCdiAnnotations ||
         s == DeviceListStrategy::kCdiCri;
}

// The requested devices in request order, and their distinct visible IDs.
struct Request {
  std::vector<const Device*> devices;
  std::vector<std::string> visible;
};

absl::StatusOr<Request> Resolve(const AllocateOptions& options,
                                const DeviceSnapshot& snapshot,
                                const std::vector<std::string>& ids) {
  Request request;
  bool any_shared = false;
  absl::flat_hash_set<std::string> seen;
  for (const std::string& id : ids) {
    const Device* device = snapshot.Find(id);
    if (device == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid request: unknown device: ", id));
    }
    any_shared = any_shared || device->replica >= 0;
    request.devices.push_back(device);
    const std::string& visible =
        device->visible_id.empty() ? device->id : device->visible_id;
    if (seen.insert(visible).second) request.visible.push_back(visible);
  }
  if (options.fail_requests_greater_than_one && any_shared && ids.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid request: maximum request size for shared resources is 1; "
        "found ",
        ids.size()));
  }
  return request;
}

absl::Status AddCdi(const AllocateOptions& o, const Request& request,
                    const std::vector<std::string>& ids,
                    v1beta1::ContainerAllocateResponse& response) {
  std::vector<std::string> names;
  for (const std::string& id : request.visible) {
    if (absl::Status s = ValidateCdiDeviceName(id); !s.ok()) {
      return absl::InternalError(s.message());
    }
    names.push_back(CdiQualifiedName(o.cdi_vendor, o.cdi_class, id));
  }
  for (int channel : o.imex_channel_ids) {
    names.push_back(CdiQualifiedName(o.cdi_vendor, kCdiImexChannelClass,
                                     std::to_string(channel)));
  }
  names.insert(names.end(), o.cdi_additional_devices.begin(),
               o.cdi_additional_devices.end());
  if (names.empty()) return absl::OkStatus();
  if (Includes(o, DeviceListStrategy::kCdiAnnotations)) {
    absl::StatusOr<std::string> key =
        CdiAnnotationKey(o.cdi_annotation_prefix, o.cdi_annotation_plugin_name,
                         AllocationUid(o.resource_name, ids));
    if (!key.ok()) return absl::InternalError(key.status().message());
    (*response.mutable_annotations())[*key] = absl::StrJoin(names, ",");
  }
  if (Includes(o, DeviceListStrategy::kCdiCri)) {
    for (std::string& name : names) {
      response.add_cdi_devices()->set_name(std::move(name));
    }
  }
  return absl::OkStatus();
}

void AddMount(const std::string& container_path, const std::string& host_path,
              v1beta1::ContainerAllocateResponse& response) {
  v1beta1::Mount* mount = response.add_mounts();
  mount->set_container_path(container_path);
  mount->set_host_path(host_path);
}

// NVIDIA's per-resource pipe directory and /dev/shm as the container sees
// them, with the pipe and shm directories of the daemon gpulet runs for the
// replica's GPU as their sources (mps_paths.h: the daemon uses the same
// functions). MPS requests are one replica (fail_requests_greater_than_one);
// a device of the resource that is not a replica has no daemon, and no MPS.
void AddMps(const AllocateOptions& o, const Request& request,
            v1beta1::ContainerAllocateResponse& response) {
  std::string key;
  for (const Device* device : request.devices) {
    if (device->replica >= 0) key = sharing::MpsReplicaKey(device->id);
    if (!key.empty()) break;
  }
  if (key.empty()) return;
  const std::string pipe_dir =
      JoinPath(kMpsContainerRoot, JoinPath(o.resource_name, "pipe"));
  (*response.mutable_envs())[sharing::kMpsPipeDirectoryEnv] = pipe_dir;
  AddMount(pipe_dir, sharing::MpsHostPipeDir(o.mps_root, key), response);
  AddMount("/dev/shm", sharing::MpsHostShmDir(o.mps_root, key), response);
}

void AddEnvvar(const AllocateOptions& o, const Request& request,
               v1beta1::ContainerAllocateResponse& response) {
  auto& envs = *response.mutable_envs();
  envs[kVisibleDevicesEnv] = absl::StrJoin(request.visible, ",");
  if (!o.imex_channel_ids.empty()) {
    envs[kImexChannelsEnv] = absl::StrJoin(o.imex_channel_ids, ",");
  }
}

void AddVolumeMounts(const AllocateOptions& o, const Request& request,
                     v1beta1::ContainerAllocateResponse& response) {
  (*response.mutable_envs())[kVisibleDevicesEnv] = kVolumeMountsRoot;
  for (const std::string& id : request.visible) {
    AddMount(JoinPath(kVolumeMountsRoot, id), kVolumeMountsHostPath, response);
  }
  for (int channel : o.imex_channel_ids) {
    AddMount(JoinPath(kVolumeMountsRoot, absl::StrCat("imex/", channel)),
             kVolumeMountsHostPath, response);
  }
}

void AddDeviceSpecs(const AllocateOptions& o, const Request& request,
                    v1beta1::ContainerAllocateResponse& response) {
  std::vector<std::string> paths =
      o.control_nodes_probe ? o.control_nodes_probe() : o.control_nodes;
  for (const Device* device : request.devices) {
    paths.insert(paths.end(), device->device_nodes.begin(),
                 device->device_nodes.end());
  }
  for (int channel : o.imex_channel_ids) {
    paths.push_back(
        absl::StrCat("/dev/nvidia-caps-imex-channels/channel", channel));
  }
  absl::flat_hash_set<std::string> seen;
  for (const std::string& path : paths) {
    if (!seen.insert(path).second) continue;
    v1beta1::DeviceSpec* spec = response.add_devices();
    spec->set_container_path(path);
    spec->set_host_path(JoinPath(o.dev_root, path));
    spec->set_permissions("rw");
  }
}

absl::Status ValidateQualifiedName(const std::string& name) {
  const size_t slash = name.find('/');
  const size_t equals = name.find('=', slash == std::string::npos ? 0 : slash);
  if (slash == std::string::npos || equals == std::string::npos ||
      !ValidateCdiVendorOrClass("vendor", name.substr(0, slash)).ok() ||
      !ValidateCdiVendorOrClass("class",
                                name.substr(slash + 1, equals - slash - 1))
           .ok() ||
      !ValidateCdiDeviceName(name.substr(equals + 1)).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "additional CDI device \"", name,
        "\" is not a qualified CDI device name (vendor/class=name)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateCdiOptions(const AllocateOptions& options) {
  if (absl::Status s = ValidateCdiVendorOrClass("vendor", options.cdi_vendor);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateCdiVendorOrClass("class", options.cdi_class);
      !s.ok()) {
    return s;
  }
  if (absl::StatusOr<std::string> key = CdiAnnotationKey(
          options.cdi_annotation_prefix, options.cdi_annotation_plugin_name,
          AllocationUid(options.resource_name, {}));
      !key.ok()) {
    return key.status();
  }
  for (const std::string& name : options.cdi_additional_devices) {
    if (absl::Status s = ValidateQualifiedName(name); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateAllocateOptions(const AllocateOptions& options) {
  if (options.strategies.empty()) {
    return absl::InvalidArgumentError(
        "flags.plugin.deviceListStrategy: at least one strategy is required");
  }
  for (int channel : options.imex_channel_ids) {
    if (channel < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("imex.channelIDs: ", channel, " is negative"));
    }
  }
  if (!options.mps_root.empty() && options.resource_name.empty()) {
    return absl::InvalidArgumentError(
        "MPS needs the resource name for its pipe directory");
  }
  if (std::none_of(options.strategies.begin(), options.strategies.end(),
                   IsCdi)) {
    return absl::OkStatus();
  }
  return ValidateCdiOptions(options);
}

absl::StatusOr<v1beta1::ContainerAllocateResponse> BuildAllocateResponse(
    const AllocateOptions& options, const DeviceSnapshot& snapshot,
    const std::vector<std::string>& ids) {
  absl::StatusOr<Request> request = Resolve(options, snapshot, ids);
  if (!request.ok()) return request.status();
  v1beta1::ContainerAllocateResponse response;
  if (std::any_of(options.strategies.begin(), options.strategies.end(),
                  IsCdi)) {
    if (absl::Status s = AddCdi(options, *request, ids, response); !s.ok()) {
      return s;
    }
  }
  if (!options.mps_root.empty()) AddMps(options, *request, response);
  if (std::all_of(options.strategies.begin(), options.strategies.end(),
                  IsCdi) &&
      !options.strategies.empty()) {
    return response;
  }
  if (Includes(options, DeviceListStrategy::kEnvvar)) {
    AddEnvvar(options, *request, response);
  }
  if (Includes(options, DeviceListStrategy::kVolumeMounts)) {
    AddVolumeMounts(options, *request, response);
  }
  if (options.pass_device_specs) AddDeviceSpecs(options, *request, response);
  auto& envs = *response.mutable_envs();
  if (options.gdrcopy_enabled) envs["NVIDIA_GDRCOPY"] = "enabled";
  if (options.gds_enabled) envs["NVIDIA_GDS"] = "enabled";
  if (options.mofed_enabled) envs["NVIDIA_MOFED"] = "enabled";
  return response;
}

absl::StatusOr<AllocateHandler> MakeAllocateHandler(AllocateOptions options) {
  if (absl::Status s = ValidateAllocateOptions(options); !s.ok()) return s;
  auto shared = std::make_shared<const AllocateOptions>(std::move(options));
  return AllocateHandler([shared](const DeviceSnapshot& snapshot,
                                  const std::vector<std::string>& ids) {
    return BuildAllocateResponse(*shared, snapshot, ids);
  });
}

absl::StatusOr<v1beta1::ContainerAllocateResponse> EnvvarResponse(
    const DeviceSnapshot& snapshot, const std::vector<std::string>& ids) {
  static const AllocateOptions kDefaults;
  return BuildAllocateResponse(kDefaults, snapshot, ids);
}

}  // namespace gpulet::allocation
