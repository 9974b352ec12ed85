#include "src/runtime/wrapper/apply_edits.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/model/cdi/spec_builder.h"
#include "src/runtime/wrapper/oci_config.h"

namespace gpulet::runtime {
namespace {

using nlohmann::json;

constexpr std::array<const char*, 6> kHookNames = {
    "prestart",       "createRuntime", "createContainer",
    "startContainer", "poststart",     "poststop"};

json& ArrayAt(json& parent, const char* key) {
  json& value = parent[key];
  if (!value.is_array()) value = json::array();
  return value;
}

json& ObjectAt(json& parent, const char* key) {
  json& value = parent[key];
  if (!value.is_object()) value = json::object();
  return value;
}

// Removes the elements of `list` whose `key` equals `value`.
void EraseWhere(json& list, const char* key, const std::string& value) {
  json kept = json::array();
  for (json& item : list) {
    if (item.is_object() && item.value(key, json()) == value) continue;
    kept.push_back(std::move(item));
  }
  list = std::move(kept);
}

absl::StatusOr<json> DeviceEntry(const cdi::DeviceNode& node,
                                 const HostDeviceLookup& lookup) {
  if (node.path.empty()) {
    return absl::InvalidArgumentError("CDI device node without a path");
  }
  const std::string host_path =
      node.host_path.empty() ? node.path : node.host_path;
  HostDevice dev;
  dev.type = node.type;
  // As the CDI reference library: the host is asked only when the spec
  // lacks the type, or the major number of a non-FIFO node.
  const bool need_stat = node.type.empty() || (node.type != "p" && !node.major);
  if (need_stat) {
    absl::StatusOr<HostDevice> host = lookup(host_path);
    if (!host.ok()) {
      return common::Annotate(host.status(),
                              absl::StrCat("device node ", node.path));
    }
    dev = *host;
    if (!node.type.empty()) dev.type = node.type;
  }
  if (node.major) dev.major = *node.major;
  if (node.minor) dev.minor = *node.minor;
  if (node.file_mode) dev.file_mode = *node.file_mode;
  if (dev.type != "c" && dev.type != "b" && dev.type != "u" &&
      dev.type != "p") {
    return absl::InvalidArgumentError(absl::StrCat(
        "device node ", node.path, ": invalid type \"", dev.type, "\""));
  }
  json entry = {{"path", node.path}, {"type", dev.type}};
  if (dev.type != "p") {
    entry["major"] = dev.major;
    entry["minor"] = dev.minor;
  }
  if (need_stat || node.file_mode) entry["fileMode"] = dev.file_mode;
  if (node.uid) entry["uid"] = *node.uid;
  if (node.gid) entry["gid"] = *node.gid;
  return entry;
}

absl::Status AddDeviceNode(const cdi::DeviceNode& node,
                           const HostDeviceLookup& lookup, json& config) {
  const std::string access =
      node.permissions.empty() ? "rwm" : node.permissions;
  if (access.find_first_not_of("rwm") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("device node ", node.path, ": permissions \"", access,
                     "\" is not a subset of rwm"));
  }
  absl::StatusOr<json> entry = DeviceEntry(node, lookup);
  if (!entry.ok()) return entry.status();
  json& linux_section = ObjectAt(config, "linux");
  json& devices = ArrayAt(linux_section, "devices");
  EraseWhere(devices, "path", node.path);
  devices.push_back(*entry);
  const std::string& type = (*entry)["type"].get_ref<const std::string&>();
  if (type == "p") return absl::OkStatus();
  json& resources = ObjectAt(linux_section, "resources");
  json rule = {{"allow", true},
               {"type", type == "u" ? "c" : type},
               {"major", (*entry)["major"]},
               {"minor", (*entry)["minor"]},
               {"access", access}};
  json& rules = ArrayAt(resources, "devices");
  if (std::find(rules.begin(), rules.end(), rule) == rules.end()) {
    rules.push_back(std::move(rule));
  }
  return absl::OkStatus();
}

absl::Status AddMount(const cdi::Mount& mount, json& config) {
  if (mount.container_path.empty() || mount.host_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CDI mount \"", mount.host_path, "\" -> \"", mount.container_path,
        "\": hostPath and containerPath are required"));
  }
  const std::string type = mount.type.empty() ? "bind" : mount.type;
  json options = json::array();
  bool has_bind = false;
  for (const std::string& option : mount.options) {
    has_bind = has_bind || option == "bind" || option == "rbind";
    options.push_back(option);
  }
  if (type == "bind" && !has_bind) options.push_back("bind");
  json& mounts = ArrayAt(config, "mounts");
  EraseWhere(mounts, "destination", mount.container_path);
  mounts.push_back({{"destination", mount.container_path},
                    {"type", type},
                    {"source", mount.host_path},
                    {"options", std::move(options)}});
  return absl::OkStatus();
}

absl::Status AddHook(const cdi::Hook& hook, json& config) {
  if (std::find_if(kHookNames.begin(), kHookNames.end(), [&](const char* n) {
        return hook.hook_name == n;
      }) == kHookNames.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CDI hook ", hook.path, ": unknown hookName \"", hook.hook_name, "\""));
  }
  if (hook.path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CDI ", hook.hook_name, " hook without a path"));
  }
  json entry = {{"path", hook.path}};
  if (!hook.args.empty()) entry["args"] = hook.args;
  // runc runs a hook without env with the environment of `runc init`,
  // which holds the container's process.env (LD_PRELOAD from the image):
  // whatever spec the hook comes from, it gets an explicit clean one.
  entry["env"] =
      hook.env.empty() ? std::vector<std::string>{cdi::kHookEnv} : hook.env;
  if (hook.timeout) entry["timeout"] = *hook.timeout;
  ArrayAt(ObjectAt(config, "hooks"), hook.hook_name.c_str()).push_back(entry);
  return absl::OkStatus();
}

// Group 0 is left out, as the CDI reference library does: root's group is
// never something a device spec should hand out.
void AddGroups(const std::vector<uint32_t>& gids, json& config) {
  if (gids.empty()) return;
  json& list =
      ArrayAt(ObjectAt(ObjectAt(config, "process"), "user"), "additionalGids");
  for (uint32_t gid : gids) {
    if (gid == 0) continue;
    if (std::find(list.begin(), list.end(), json(gid)) == list.end()) {
      list.push_back(gid);
    }
  }
}

}  // namespace

absl::StatusOr<HostDevice> StatHostDevice(const std::string& host_path) {
  struct stat st;
  if (::stat(host_path.c_str(), &st) != 0) {
    return common::ErrnoToStatus(errno, absl::StrCat("stat ", host_path));
  }
  HostDevice dev;
  if (S_ISCHR(st.st_mode)) {
    dev.type = "c";
  } else if (S_ISBLK(st.st_mode)) {
    dev.type = "b";
  } else if (S_ISFIFO(st.st_mode)) {
    dev.type = "p";
  } else {
    return absl::FailedPreconditionError(
        absl::StrCat(host_path, " is not a device node"));
  }
  dev.major = major(st.st_rdev);
  dev.minor = minor(st.st_rdev);
  dev.file_mode = st.st_mode & 07777;
  return dev;
}

absl::Status ApplyEdits(const cdi::ContainerEdits& edits,
                        const HostDeviceLookup& lookup, json& config) {
  for (const std::string& entry : edits.env) {
    if (entry.find('=') == std::string::npos || entry[0] == '=') {
      return absl::InvalidArgumentError(
          absl::StrCat("CDI env \"", entry, "\" is not KEY=value"));
    }
    SetProcessEnv(config, entry);
  }
  for (const cdi::DeviceNode& node : edits.device_nodes) {
    if (absl::Status s = AddDeviceNode(node, lookup, config); !s.ok()) return s;
  }
  for (const cdi::Mount& mount : edits.mounts) {
    if (absl::Status s = AddMount(mount, config); !s.ok()) return s;
  }
  for (const cdi::Hook& hook : edits.hooks) {
    if (absl::Status s = AddHook(hook, config); !s.ok()) return s;
  }
  AddGroups(edits.additional_gids, config);
  return absl::OkStatus();
}

}  // namespace gpulet::runtime
