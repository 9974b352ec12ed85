// cdi::Spec values for the runtime's unit tests: a two-GPU nvidia.com/gpu
// spec with control nodes, a library mount and an ld-cache hook at spec
// level. Test-only.
#pragma once

#include "src/model/cdi/spec.h"

namespace gpulet::runtime::testing {

inline cdi::DeviceNode Node(const std::string& path, int64_t minor,
                            int64_t major = 195) {
  cdi::DeviceNode node;
  node.path = path;
  node.type = "c";
  node.major = major;
  node.minor = minor;
  node.file_mode = 0666;
  return node;
}

inline cdi::Spec TwoGpuSpec() {
  cdi::Spec spec;
  spec.cdi_version = "0.5.0";
  spec.kind = "nvidia.com/gpu";
  for (int i = 0; i < 2; ++i) {
    cdi::Device device;
    device.name = std::to_string(i);
    device.edits.device_nodes.push_back(
        Node("/dev/nvidia" + std::to_string(i), i));
    spec.devices.push_back(device);
  }
  cdi::Device all;
  all.name = "all";
  all.edits.device_nodes = {Node("/dev/nvidia0", 0), Node("/dev/nvidia1", 1)};
  spec.devices.push_back(all);
  spec.edits.device_nodes = {Node("/dev/nvidiactl", 255),
                             Node("/dev/nvidia-uvm", 0, 235)};
  cdi::Mount lib;
  lib.host_path = "/drv/usr/lib/libcuda.so.550.54.15";
  lib.container_path = "/usr/lib/libcuda.so.550.54.15";
  lib.options = {"ro", "nosuid", "nodev", "bind"};
  spec.edits.mounts = {lib};
  cdi::Hook hook;
  hook.hook_name = "createContainer";
  hook.path = "/usr/bin/gpulet-runtime";
  hook.args = {"gpulet-runtime", "hook", "update-ldcache", "--folder",
               "/usr/lib"};
  spec.edits.hooks = {hook};
  spec.edits.env = {"NVIDIA_DRIVER_ROOT=/drv"};
  return spec;
}

}  // namespace gpulet::runtime::testing
