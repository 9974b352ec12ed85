// RenderNode: /dev, /proc and /sys of the simulated node (render_driver.cc
// adds the driver root).
#include "sim/node_render.h"

#include <filesystem>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "sim/render_fs.h"
#include "src/base/common/status_macros.h"

namespace gpulet::sim {

// render_sys.cc
absl::Status RenderSys(const Machine& machine, const std::string& root,
                       DevNodes how);

// render_driver.cc
absl::Status RenderDriverRoot(const Machine& machine,
                              const std::string& driver_root,
                              const std::string& nvml_library);

namespace {

constexpr char kCapsProc[] = "/proc/driver/nvidia/capabilities";
// The mode the driver gives MIG access capabilities (0444).
constexpr int kCapAccessMode = 292;

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string CapAccessText(unsigned minor) {
  return absl::StrCat("DeviceFileMinor: ", minor,
                      "\nDeviceFileMode: ", kCapAccessMode,
                      "\nDeviceFileModify: 1\n");
}

// The driver creates only channel 0 (NVreg_CreateImexChannel0); further
// channels are made by whoever hands them out.
absl::Status RenderImexChannels(const Machine& machine, const std::string& dev,
                                DevNodes how) {
  const std::string dir = dev + "/nvidia-caps-imex-channels";
  if (machine.imex_channels == 0) {
    GPULET_RETURN_IF_ERROR(
        render::RemoveStale(dir, [](const std::string&) { return true; }));
    std::error_code ec;
    std::filesystem::remove(dir, ec);
    return absl::OkStatus();
  }
  GPULET_RETURN_IF_ERROR(render::EnsureDir(dir));
  GPULET_RETURN_IF_ERROR(
      render::CharDevice(dir + "/channel0", kNvidiaCapsImexMajor, 0, how));
  return render::RemoveStale(
      dir, [](const std::string& name) { return name != "channel0"; });
}

absl::Status RenderDev(const Machine& machine, const std::string& root,
                       DevNodes how) {
  const std::string dev = root + "/dev";
  GPULET_RETURN_IF_ERROR(render::EnsureDir(dev + "/nvidia-caps"));
  std::set<std::string> gpu_nodes;
  for (const Gpu& gpu : machine.gpus) {
    gpu_nodes.insert(absl::StrCat("nvidia", gpu.minor));
    GPULET_RETURN_IF_ERROR(render::CharDevice(
        absl::StrCat(dev, "/nvidia", gpu.minor), kNvidiaMajor, gpu.minor, how));
  }
  GPULET_RETURN_IF_ERROR(render::RemoveStale(dev, [&](const std::string& name) {
    absl::string_view rest = name;
    return absl::ConsumePrefix(&rest, "nvidia") && AllDigits(rest) &&
           !gpu_nodes.contains(name);
  }));
  GPULET_RETURN_IF_ERROR(render::CharDevice(dev + "/nvidiactl", kNvidiaMajor,
                                            kNvidiaCtlMinor, how));
  GPULET_RETURN_IF_ERROR(render::CharDevice(
      dev + "/nvidia-modeset", kNvidiaMajor, kNvidiaModesetMinor, how));
  GPULET_RETURN_IF_ERROR(
      render::CharDevice(dev + "/nvidia-uvm", kNvidiaUvmMajor, 0, how));
  GPULET_RETURN_IF_ERROR(
      render::CharDevice(dev + "/nvidia-uvm-tools", kNvidiaUvmMajor, 1, how));
  // The MIG config and monitor caps, and one per existing GPU and compute
  // instance, as nvidia-modprobe -f creates them.
  std::set<unsigned> caps = {1, 2};
  for (const Gpu& gpu : machine.gpus) {
    if (!gpu.mig_enabled) continue;
    for (const MigDevice& mig : gpu.mig_devices) {
      caps.insert(GpuInstanceCapMinor(gpu.minor, mig.gpu_instance_id));
      caps.insert(ComputeInstanceCapMinor(gpu.minor, mig.gpu_instance_id,
                                          mig.compute_instance_id));
    }
  }
  std::set<std::string> cap_names;
  for (unsigned minor : caps) {
    cap_names.insert(absl::StrCat("nvidia-cap", minor));
    GPULET_RETURN_IF_ERROR(
        render::CharDevice(absl::StrCat(dev, "/nvidia-caps/nvidia-cap", minor),
                           kNvidiaCapsMajor, minor, how));
  }
  GPULET_RETURN_IF_ERROR(render::RemoveStale(
      dev + "/nvidia-caps",
      [&](const std::string& n) { return !cap_names.contains(n); }));
  return RenderImexChannels(machine, dev, how);
}

absl::Status RenderMigCapabilities(const Machine& machine,
                                   const std::string& root) {
  const std::string caps = root + kCapsProc;
  GPULET_RETURN_IF_ERROR(render::EnsureDir(caps + "/mig"));
  GPULET_RETURN_IF_ERROR(
      render::WriteFile(caps + "/mig/config", CapAccessText(1)));
  GPULET_RETURN_IF_ERROR(
      render::WriteFile(caps + "/mig/monitor", CapAccessText(2)));
  std::set<std::string> gpus;
  for (const Gpu& gpu : machine.gpus) {
    if (!gpu.mig_enabled) continue;
    const std::string name = absl::StrCat("gpu", gpu.minor);
    gpus.insert(name);
    const std::string mig = absl::StrCat(caps, "/", name, "/mig");
    GPULET_RETURN_IF_ERROR(
        render::RemoveStale(mig, [](const std::string&) { return true; }));
    for (const MigDevice& d : gpu.mig_devices) {
      const std::string gi = absl::StrCat(mig, "/gi", d.gpu_instance_id);
      const std::string ci = absl::StrCat(gi, "/ci", d.compute_instance_id);
      GPULET_RETURN_IF_ERROR(render::EnsureDir(ci));
      GPULET_RETURN_IF_ERROR(render::WriteFile(
          gi + "/access",
          CapAccessText(GpuInstanceCapMinor(gpu.minor, d.gpu_instance_id))));
      GPULET_RETURN_IF_ERROR(render::WriteFile(
          ci + "/access",
          CapAccessText(ComputeInstanceCapMinor(gpu.minor, d.gpu_instance_id,
                                                d.compute_instance_id))));
    }
  }
  return render::RemoveStale(caps, [&](const std::string& name) {
    return absl::StartsWith(name, "gpu") && !gpus.contains(name);
  });
}

absl::Status RenderProc(const Machine& machine, const std::string& root) {
  const std::string nvidia = root + "/proc/driver/nvidia";
  GPULET_RETURN_IF_ERROR(render::EnsureDir(nvidia + "/gpus"));
  GPULET_RETURN_IF_ERROR(render::EnsureDir(root + "/proc/driver/nvidia-caps"));
  GPULET_RETURN_IF_ERROR(
      render::WriteFile(root + "/proc/devices",
                        ProcDevicesText(machine.imex_channels > 0), 0444));
  GPULET_RETURN_IF_ERROR(
      render::WriteFile(nvidia + "/version", ProcVersionText(machine), 0444));
  GPULET_RETURN_IF_ERROR(render::WriteFile(
      root + "/proc/driver/nvidia-caps/mig-minors", MigMinorsText(), 0444));
  std::set<std::string> bdfs;
  for (const Gpu& gpu : machine.gpus) {
    const std::string bdf = SysfsBusId(gpu.bus_id);
    bdfs.insert(bdf);
    const std::string dir = absl::StrCat(nvidia, "/gpus/", bdf);
    GPULET_RETURN_IF_ERROR(render::EnsureDir(dir));
    GPULET_RETURN_IF_ERROR(render::WriteFile(
        dir + "/information", ProcGpuInformationText(gpu), 0444));
  }
  GPULET_RETURN_IF_ERROR(render::RemoveStale(
      nvidia + "/gpus",
      [&](const std::string& name) { return !bdfs.contains(name); }));
  return RenderMigCapabilities(machine, root);
}

}  // namespace

absl::Status RenderNode(const Machine& machine, const RenderOptions& options) {
  if (options.root.empty() || options.root.front() != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "render root \"", options.root, "\" must be an absolute path"));
  }
  if (options.root == "/" || absl::StartsWith(options.driver_dir, "/") ||
      absl::StrContains(options.driver_dir, "..")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "render root \"", options.root, "\" / driver dir \"",
        options.driver_dir,
        "\": the root must not be / and the driver dir must stay inside it"));
  }
  if (!machine.driver_loaded) {
    return absl::InvalidArgumentError(
        absl::StrCat(machine.source,
                     ": the machine has no driver loaded; there is no "
                     "driver to render"));
  }
  GPULET_RETURN_IF_ERROR(render::EnsureDir(options.root));
  GPULET_RETURN_IF_ERROR(RenderDev(machine, options.root, options.dev_nodes));
  GPULET_RETURN_IF_ERROR(RenderProc(machine, options.root));
  GPULET_RETURN_IF_ERROR(RenderSys(machine, options.root, options.dev_nodes));
  const std::string driver_root =
      options.driver_dir.empty() || options.driver_dir == "."
          ? options.root
          : absl::StrCat(options.root, "/", options.driver_dir);
  return RenderDriverRoot(machine, driver_root, options.nvml_library);
}

}  // namespace gpulet::sim
