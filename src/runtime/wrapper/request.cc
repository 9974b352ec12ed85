#include "src/runtime/wrapper/request.h"

#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "src/base/common/logging.h"
#include "src/model/cdi/validate.h"
#include "src/runtime/wrapper/oci_config.h"

namespace gpulet::runtime {
namespace {

using nlohmann::json;

class NameList {
 public:
  void Add(std::string name) {
    if (seen_.insert(name).second) names_.push_back(std::move(name));
  }
  std::vector<std::string> Take() { return std::move(names_); }

 private:
  std::set<std::string> seen_;
  std::vector<std::string> names_;
};

absl::Status AddAnnotations(const json& config, const RequestOptions& options,
                            NameList& names) {
  auto annotations = config.find("annotations");
  if (annotations == config.end() || !annotations->is_object()) {
    return absl::OkStatus();
  }
  for (const auto& [key, value] : annotations->items()) {
    if (!absl::StartsWith(key, options.annotation_prefix)) continue;
    if (!value.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("annotations[\"", key, "\"]: not a string"));
    }
    for (absl::string_view name :
         absl::StrSplit(value.get_ref<const std::string&>(), ',',
                        absl::SkipWhitespace())) {
      name = absl::StripAsciiWhitespace(name);
      if (absl::StatusOr<cdi::ParsedName> parsed =
              cdi::ParseQualifiedName(std::string(name));
          !parsed.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "annotations[\"", key, "\"]: ", parsed.status().message()));
      }
      names.Add(std::string(name));
    }
  }
  return absl::OkStatus();
}

bool HasBindOption(const json& mount) {
  auto options = mount.find("options");
  if (options == mount.end() || !options->is_array()) return false;
  for (const json& option : *options) {
    if (option == "bind" || option == "rbind") return true;
  }
  return false;
}

// The kubelet's device-plugin mounts are binds of /dev/null (containerd
// writes type "bind" with "rbind"; CRI-O type "bind"); an emptyDir, a
// hostPath or any other volume a pod spec can put at the same destination
// has another source and asks for nothing.
bool IsDeviceListMount(const json& mount) {
  auto source = mount.find("source");
  if (source == mount.end() || *source != kVolumeMountSource) return false;
  auto type = mount.find("type");
  return (type != mount.end() && *type == "bind") || HasBindOption(mount);
}

std::vector<std::string> VolumeMountIds(const json& config) {
  std::vector<std::string> ids;
  auto mounts = config.find("mounts");
  if (mounts == config.end() || !mounts->is_array()) return ids;
  const std::string prefix = absl::StrCat(kVolumeMountDir, "/");
  for (const json& mount : *mounts) {
    if (!mount.is_object()) continue;
    auto dest = mount.find("destination");
    if (dest == mount.end() || !dest->is_string()) continue;
    absl::string_view d = dest->get_ref<const std::string&>();
    if (!absl::ConsumePrefix(&d, prefix) || d.empty() ||
        absl::StrContains(d, "/")) {
      continue;
    }
    if (!IsDeviceListMount(mount)) {
      GPULET_VLOG(1) << "mount at " << dest->get_ref<const std::string&>()
                     << " ignored: not a bind mount of " << kVolumeMountSource;
      continue;
    }
    ids.emplace_back(d);
  }
  return ids;
}

// A device ID becomes <vendor>/<class>=<id>; a qualified name stays as is.
absl::Status AddIds(const std::vector<std::string>& ids,
                    const RequestOptions& options, absl::string_view origin,
                    NameList& names) {
  const std::string kind =
      absl::StrCat(options.vendor, "/", options.device_class);
  for (const std::string& raw : ids) {
    const std::string id(absl::StripAsciiWhitespace(raw));
    if (id.empty()) continue;
    const bool qualified = absl::StrContains(id, "=");
    std::string name = qualified ? id : absl::StrCat(kind, "=", id);
    if (absl::StatusOr<cdi::ParsedName> parsed = cdi::ParseQualifiedName(name);
        !parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": device ", id, ": ", parsed.status().message()));
    }
    // Other kinds (a DRA claim's devices, the plugin's per-allocation
    // devices, another vendor's) reach a container only through the
    // kubelet; a name the image or pod spec wrote may not point at them.
    if (qualified && SplitQualifiedName(name).first != kind) {
      return absl::PermissionDeniedError(absl::StrCat(
          origin, ": device ", id, ": only ", kind,
          " devices may be named here; devices of other kinds come through "
          "the kubelet (device plugin or resource claim)"));
    }
    names.Add(std::move(name));
  }
  return absl::OkStatus();
}

absl::Status AddEnvRequest(const json& config, const RequestOptions& options,
                           const std::string& value, NameList& names,
                           bool& driver_only) {
  if (value.empty() || value == "void" || value == kVolumeMountDir) {
    return absl::OkStatus();
  }
  if (!options.accept_envvar_unprivileged && !IsPrivileged(config)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "process.env ", kVisibleDevicesEnv, "=", value,
        ": the container is unprivileged (no CAP_SYS_ADMIN in "
        "process.capabilities.bounding) and acceptEnvvarUnprivileged is "
        "false; request GPUs through the device plugin instead"));
  }
  if (value == "none") {
    driver_only = true;
    return absl::OkStatus();
  }
  std::vector<std::string> ids = absl::StrSplit(value, ',');
  return AddIds(ids, options, absl::StrCat("process.env ", kVisibleDevicesEnv),
                names);
}

}  // namespace

std::pair<std::string, std::string> SplitQualifiedName(absl::string_view name) {
  const size_t eq = name.find('=');
  return {std::string(name.substr(0, eq)), std::string(name.substr(eq + 1))};
}

absl::StatusOr<GpuRequest> DetectRequest(const json& config,
                                         const RequestOptions& options) {
  NameList names;
  GpuRequest request;
  if (absl::Status s = AddAnnotations(config, options, names); !s.ok()) {
    return s;
  }
  const std::vector<std::string> mount_ids = VolumeMountIds(config);
  if (!mount_ids.empty()) {
    // The kubelet wrote these; the env var then only points at them.
    // Each is one path component, so none holds a qualified name.
    if (absl::Status s =
            AddIds(mount_ids, options, absl::StrCat("mounts ", kVolumeMountDir),
                   names);
        !s.ok()) {
      return s;
    }
  } else if (std::optional<std::string> env =
                 GetProcessEnv(config, kVisibleDevicesEnv)) {
    if (absl::Status s =
            AddEnvRequest(config, options, *env, names, request.driver_only);
        !s.ok()) {
      return s;
    }
  }
  request.cdi_names = names.Take();
  return request;
}

}  // namespace gpulet::runtime
