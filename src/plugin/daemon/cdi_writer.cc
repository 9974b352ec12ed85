#include "src/plugin/daemon/cdi_writer.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "src/model/allocation/allocate_cdi.h"
#include "src/model/cdi/spec_file.h"

namespace gpulet::daemon {
namespace {

// absl::StrCat rather than string operators: GCC 12 at -O2 reports a
// -Wrestrict false positive on the latter here.
std::string Rebase(const std::string& path, const std::string& from,
                   const std::string& to) {
  if (from.empty() || from == "/" || from == to) return path;
  if (path != from && !absl::StartsWith(path, absl::StrCat(from, "/"))) {
    return path;
  }
  absl::string_view rest = absl::string_view(path).substr(from.size());
  absl::string_view base = absl::StripSuffix(to, "/");
  if (base.empty() && rest.empty()) return "/";
  return absl::StrCat(base, rest);
}

}  // namespace

bool WantsCdiSpec(const config::Config& config) {
  const auto& s = config.flags.plugin.device_list_strategy;
  return std::any_of(s.begin(), s.end(), [](config::DeviceListStrategy d) {
    return d == config::DeviceListStrategy::kCdiAnnotations ||
           d == config::DeviceListStrategy::kCdiCri;
  });
}

void RebaseHostPaths(cdi::Spec& spec, const std::string& from,
                     const std::string& to) {
  auto edit = [&](cdi::ContainerEdits& e) {
    for (cdi::DeviceNode& n : e.device_nodes) {
      if (!n.host_path.empty()) n.host_path = Rebase(n.host_path, from, to);
    }
    for (cdi::Mount& m : e.mounts) m.host_path = Rebase(m.host_path, from, to);
  };
  edit(spec.edits);
  for (cdi::Device& d : spec.devices) edit(d.edits);
}

absl::StatusOr<std::string> WriteCdiSpec(const device::Node& node,
                                         const config::Config& config,
                                         const resources::HostView& view,
                                         const std::string& dir) {
  const std::string& host_root = config.flags.nvidia_driver_root;
  const std::string& seen_root = view.driver_root;
  cdi::DriverOptions driver;
  driver.driver_root = seen_root;
  driver.dev_root = view.probe_root;
  driver.proc_root =
      std::string(1, '/');  // /proc is the kernel's, in or out of a container
  cdi::BuildOptions build;
  build.vendor = allocation::kPluginCdiVendor;
  build.cls = allocation::kPluginCdiClass;
  absl::StatusOr<cdi::Spec> spec = cdi::GenerateSpec(node, driver, build);
  if (!spec.ok()) return spec.status();
  RebaseHostPaths(*spec, seen_root, host_root);
  if (view.probe_root != seen_root) {
    RebaseHostPaths(*spec, view.probe_root, view.dev_root);
  }
  // JSON under NVIDIA's file name (k8s.device-plugin.nvidia.com-gpu.json):
  // it replaces the spec NVIDIA's plugin left on a node gpulet takes over,
  // which would otherwise define every device a second time.
  return cdi::WriteSpecFile(dir, *spec, cdi::Format::kJson);
}

}  // namespace gpulet::daemon
