#include "test/runtime/runc_fixture.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"
#include "src/model/cdi/spec_codec.h"
#include "src/model/cdi/validate.h"
#include "test/integration/subprocess.h"

namespace gpulet::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kLibStems[] = {"libcuda.so", "libnvidia-ml.so"};
constexpr char kBusybox[] = "/bin/busybox";

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path != nullptr ? path : "/usr/sbin:/usr/bin", ':')) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

absl::Status Mknod(const std::string& path, int major, int minor) {
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(major, minor)) != 0) {
    return common::ErrnoToStatus(errno, absl::StrCat("mknod ", path));
  }
  ::chmod(path.c_str(), 0666);
  return absl::OkStatus();
}

absl::Status Run(const std::vector<std::string>& argv) {
  ProcessResult r = RunProcess(argv);
  if (r.exit_code != 0) {
    return absl::InternalError(
        absl::StrCat(argv[0], " failed (", r.exit_code, "): ", r.err));
  }
  return absl::OkStatus();
}

cdi::DeviceNode Node(const std::string& root, const std::string& path) {
  cdi::DeviceNode node;
  node.path = path;
  node.host_path = root + path;
  return node;
}

cdi::DeviceNode FixedNode(const std::string& root, const std::string& path,
                          int major, int minor) {
  cdi::DeviceNode node = Node(root, path);
  node.type = "c";
  node.major = major;
  node.minor = minor;
  node.file_mode = 0666;
  return node;
}

}  // namespace

bool CanRunContainers(std::string* why) {
  if (::geteuid() != 0) {
    *why = "needs root (mknod, runc)";
    return false;
  }
  if (FindOnPath("runc").empty()) {
    *why = "runc not on PATH (scripts/bootstrap installs it)";
    return false;
  }
  if (::access(kBusybox, X_OK) != 0) {
    *why = "no /bin/busybox (busybox-static; scripts/bootstrap installs it)";
    return false;
  }
  return true;
}

absl::StatusOr<std::unique_ptr<RuncFixture>> RuncFixture::Create(
    const FixturePaths& paths) {
  char tmpl[] = "/tmp/grtXXXXXX";
  if (::mkdtemp(tmpl) == nullptr)
    return common::ErrnoToStatus(errno, "mkdtemp");
  std::unique_ptr<RuncFixture> fixture(new RuncFixture(tmpl, paths));
  if (absl::Status s = fixture->Build(); !s.ok()) return s;
  return fixture;
}

RuncFixture::~RuncFixture() {
  for (const std::string& id : containers_) {
    RunProcess({runc_, "--root", state_root(), "delete", "--force", id});
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

absl::Status RuncFixture::Build() {
  runc_ = FindOnPath("runc");
  std::error_code ec;
  fs::create_directories(state_root(), ec);
  fs::create_directories(spec_dir(), ec);
  if (absl::Status s = MakeDriverRoot(); !s.ok()) return s;
  if (absl::Status s = MakeSpec(); !s.ok()) return s;
  // runc's own default config is the template of every bundle.
  if (absl::Status s = Run({runc_, "spec", "--bundle", dir_}); !s.ok())
    return s;
  fs::rename(dir_ + "/config.json", dir_ + "/template.json", ec);
  if (ec) return absl::InternalError("rename template: " + ec.message());
  return WriteRuntimeConfig();
}

absl::Status RuncFixture::MakeDriverRoot() {
  const std::string dev = driver_root() + "/dev";
  const std::string lib = driver_root() + kFakeLibDir;
  std::error_code ec;
  fs::create_directories(dev, ec);
  fs::create_directories(lib, ec);
  fs::create_directories(driver_root() + "/etc", ec);
  for (int i = 0; i < kFakeGpuCount; ++i) {
    absl::Status s = Mknod(absl::StrCat(dev, "/nvidia", i), kNvidiaMajor, i);
    if (!s.ok()) return s;
  }
  for (auto [name, major, minor] :
       {std::tuple{"nvidiactl", kNvidiaMajor, 255},
        std::tuple{"nvidia-modeset", kNvidiaMajor, 254},
        std::tuple{"nvidia-uvm", kUvmMajor, 0},
        std::tuple{"nvidia-uvm-tools", kUvmMajor, 1}}) {
    absl::Status s = Mknod(absl::StrCat(dev, "/", name), major, minor);
    if (!s.ok()) return s;
  }
  for (const char* stem : kLibStems) {
    const std::string file = absl::StrCat(stem, ".", kFakeDriverVersion);
    fs::copy_file(absl::StrCat(paths_.fake_lib_dir, "/", file),
                  absl::StrCat(lib, "/", file), ec);
    if (ec) return absl::InternalError("copy " + file + ": " + ec.message());
  }
  std::ofstream(driver_root() + "/etc/ld.so.conf") << kFakeLibDir << "\n";
  return Run({"/sbin/ldconfig", "-r", driver_root()});
}

absl::Status RuncFixture::MakeSpec() {
  const std::string root = driver_root();
  spec_.kind = "nvidia.com/gpu";
  cdi::Device all;
  all.name = "all";
  for (int i = 0; i < kFakeGpuCount; ++i) {
    // No type or numbers: the runtime takes them from the host node.
    cdi::Device gpu;
    gpu.name = std::to_string(i);
    gpu.edits.device_nodes = {Node(root, absl::StrCat("/dev/nvidia", i))};
    spec_.devices.push_back(gpu);
    gpu.name = absl::StrCat("GPU-fake-", i);
    spec_.devices.push_back(gpu);
    all.edits.device_nodes.push_back(gpu.edits.device_nodes[0]);
  }
  spec_.devices.push_back(all);
  spec_.edits.device_nodes = {
      FixedNode(root, "/dev/nvidiactl", kNvidiaMajor, 255),
      FixedNode(root, "/dev/nvidia-modeset", kNvidiaMajor, 254),
      FixedNode(root, "/dev/nvidia-uvm", kUvmMajor, 0),
      FixedNode(root, "/dev/nvidia-uvm-tools", kUvmMajor, 1)};
  for (const char* stem : kLibStems) {
    cdi::Mount mount;
    mount.container_path =
        absl::StrCat(kFakeLibDir, "/", stem, ".", kFakeDriverVersion);
    mount.host_path = root + mount.container_path;
    mount.options = {"ro", "nosuid", "nodev", "rbind", "rprivate"};
    spec_.edits.mounts.push_back(mount);
  }
  cdi::Hook hook;
  hook.hook_name = "createContainer";
  hook.path = paths_.gpulet_runtime;
  hook.args = {"gpulet-runtime", "hook", "update-ldcache", "--folder",
               kFakeLibDir};
  spec_.edits.hooks = {hook};
  spec_.edits.env = {"NVIDIA_VISIBLE_DEVICES=void"};
  spec_.cdi_version = cdi::MinimumVersion(spec_);
  if (absl::Status s = cdi::Validate(spec_); !s.ok()) return s;
  return common::WriteFileAtomic(spec_dir() + "/nvidia.com-gpu.json",
                                 cdi::SpecToJson(spec_));
}

absl::Status RuncFixture::WriteRuntimeConfig(const std::string& extra) {
  return common::WriteFileAtomic(
      runtime_config(),
      absl::StrCat("runtime: ", runc_, "\ndriverRoot: ", driver_root(),
                   "\nspecDirs: [", spec_dir(), "]\n", extra));
}

absl::StatusOr<std::string> RuncFixture::MakeBundle(
    const std::string& name, const std::vector<std::string>& args,
    const std::vector<std::string>& env) {
  const std::string bundle = absl::StrCat(dir_, "/", name);
  const std::string rootfs = bundle + "/rootfs";
  std::error_code ec;
  fs::create_directories(rootfs + "/bin", ec);
  fs::create_directories(rootfs + "/etc", ec);
  fs::copy_file(kBusybox, rootfs + "/bin/busybox", ec);
  if (ec) return absl::InternalError("copy busybox: " + ec.message());
  for (const char* tool : {"sh", "ls", "cat", "sleep", "readlink"}) {
    fs::create_symlink("busybox", absl::StrCat(rootfs, "/bin/", tool), ec);
  }
  absl::StatusOr<std::string> text = common::ReadFile(dir_ + "/template.json");
  if (!text.ok()) return text.status();
  json config = json::parse(*text);
  config["process"]["terminal"] = false;
  config["process"]["args"] = args;
  for (const std::string& e : env) config["process"]["env"].push_back(e);
  config["root"]["path"] = "rootfs";
  if (absl::Status s = WriteConfig(bundle, config); !s.ok()) return s;
  return bundle;
}

absl::StatusOr<json> RuncFixture::ReadConfig(const std::string& bundle) const {
  absl::StatusOr<std::string> text = common::ReadFile(bundle + "/config.json");
  if (!text.ok()) return text.status();
  return json::parse(*text);
}

absl::Status RuncFixture::WriteConfig(const std::string& bundle,
                                      const json& config) const {
  return common::WriteFileAtomic(bundle + "/config.json", config.dump(2));
}

std::vector<std::string> ViewCommand() {
  return {
      "sh", "-c",
      absl::StrCat("ls /dev; echo @@; cat /sys/fs/cgroup/devices/devices.list;"
                   " echo @@; ls ",
                   kFakeLibDir, " 2>/dev/null; true")};
}

ContainerView ParseView(const std::string& out) {
  ContainerView view;
  std::vector<std::string>* section = &view.dev;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    if (line == "@@") {
      section = section == &view.dev ? &view.cgroup_rules : &view.libs;
      continue;
    }
    for (absl::string_view word :
         absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      if (section != &view.cgroup_rules) section->emplace_back(word);
    }
    if (section == &view.cgroup_rules) section->emplace_back(line);
  }
  return view;
}

}  // namespace gpulet::testing
