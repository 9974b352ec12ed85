// The Container Device Interface (CDI) spec model: what `gpulet cdi
// generate` writes, what `gpulet plugin` names in its cdi-annotations /
// cdi-cri Allocate answers, and what `gpulet-runtime` applies to an OCI
// bundle. Field names and meaning follow the CDI specification
// (tags.cncf.io/container-device-interface, specs-go): a Spec has a kind
// ("vendor/class"), devices each with their own ContainerEdits, and
// ContainerEdits common to every device of the spec.
//
// Values only; conversion to and from JSON/YAML lives in spec_codec.h,
// validation and the minimum cdiVersion in validate.h, building a spec for a
// node in spec_builder.h, files in spec_file.h. The CDI fields gpulet does
// not model (intelRdt, netDevices) are rejected when parsing.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpulet::cdi {

struct DeviceNode {
  std::string path;       // path inside the container, "/dev/nvidia0"
  std::string host_path;  // empty: same as path (needs cdiVersion >= 0.5.0)
  std::string type;       // "c", "b", "u", "p"; empty: taken from the host
  std::optional<int64_t> major;
  std::optional<int64_t> minor;
  std::optional<uint32_t> file_mode;
  std::string permissions;  // cgroup access, subset of "rwm"; empty: "rwm"
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  bool operator==(const DeviceNode&) const = default;
};

struct Mount {
  std::string host_path;
  std::string container_path;
  std::string type;  // empty: bind
  std::vector<std::string> options;
  bool operator==(const Mount&) const = default;
};

struct Hook {
  std::string hook_name;  // "createContainer", "startContainer", ...
  std::string path;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<int> timeout;
  bool operator==(const Hook&) const = default;
};

struct ContainerEdits {
  std::vector<std::string> env;  // "KEY=value"
  std::vector<DeviceNode> device_nodes;
  std::vector<Mount> mounts;
  std::vector<Hook> hooks;
  std::vector<uint32_t> additional_gids;  // needs cdiVersion >= 0.7.0
  bool empty() const {
    return env.empty() && device_nodes.empty() && mounts.empty() &&
           hooks.empty() && additional_gids.empty();
  }
  bool operator==(const ContainerEdits&) const = default;
};

struct Device {
  std::string name;  // "0", "0:1", "GPU-…", "MIG-…", "all"
  std::map<std::string, std::string> annotations;  // needs cdiVersion >= 0.6.0
  ContainerEdits edits;
  bool operator==(const Device&) const = default;
};

struct Spec {
  std::string cdi_version;  // "0.5.0"; see MinimumVersion
  std::string kind;         // "nvidia.com/gpu"
  std::map<std::string, std::string> annotations;  // needs cdiVersion >= 0.6.0
  std::vector<Device> devices;
  ContainerEdits edits;  // applied once whenever any device is injected
  bool operator==(const Spec&) const = default;
};

inline constexpr char kDefaultVendor[] = "nvidia.com";
inline constexpr char kDefaultClass[] = "gpu";

}  // namespace gpulet::cdi
