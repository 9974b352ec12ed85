#include "src/model/cdi/driver.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"
#include "src/base/common/logging.h"
#include "src/model/cdi/ld_cache.h"

namespace gpulet::cdi {
namespace {

constexpr const char* kControlNodes[] = {"nvidiactl", "nvidia-uvm",
                                         "nvidia-uvm-tools", "nvidia-modeset"};

// Library directories searched when ld.so.cache does not name a library:
// this machine's multiarch directory, then the generic ones.
constexpr const char* kLibraryDirs[] = {
#if defined(__x86_64__)
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
#elif defined(__aarch64__)
    "/usr/lib/aarch64-linux-gnu",
    "/lib/aarch64-linux-gnu",
#endif
    "/usr/lib64",
    "/lib64",
    "/usr/lib",
    "/lib"};

constexpr const char* kBinaryDirs[] = {"/usr/bin", "/usr/sbin", "/bin", "/sbin",
                                       "/usr/local/bin"};

bool AllDigits(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

// Whether a file name in /dev is one of NVIDIA's nodes a container uses.
bool IsNvidiaDevName(absl::string_view name) {
  for (const char* control : kControlNodes) {
    if (name == control) return true;
  }
  return absl::ConsumePrefix(&name, "nvidia") && AllDigits(name);
}

bool IsCapName(absl::string_view name) {
  return absl::ConsumePrefix(&name, "nvidia-cap") && AllDigits(name);
}

absl::Status CheckDirectory(const std::string& what, const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return common::ErrnoToStatus(errno, absl::StrCat(what, " ", path));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(
        absl::StrCat(what, " ", path, ": not a directory"));
  }
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    return common::ErrnoToStatus(errno, absl::StrCat(what, " ", path));
  }
  ::closedir(dir);
  return absl::OkStatus();
}

// Names in a directory; empty when it cannot be read.
std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return names;
  while (struct dirent* entry = ::readdir(dir)) names.push_back(entry->d_name);
  ::closedir(dir);
  return names;
}

// Appends the node at container path `path` if it is a device node.
void AddNode(const std::string& dev_root, const std::string& path,
             std::vector<HostDeviceNode>& out) {
  std::string host_path = UnderRoot(dev_root, path);
  struct stat st;
  if (::stat(host_path.c_str(), &st) != 0) return;
  if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) return;
  out.push_back(HostDeviceNode{path, host_path, S_ISCHR(st.st_mode) ? "c" : "b",
                               major(st.st_rdev), minor(st.st_rdev),
                               static_cast<uint32_t>(st.st_mode & 07777)});
}

std::vector<HostDeviceNode> FindDeviceNodes(const std::string& dev_root) {
  std::vector<HostDeviceNode> nodes;
  for (const std::string& name : ListDir(UnderRoot(dev_root, "/dev"))) {
    if (IsNvidiaDevName(name)) AddNode(dev_root, "/dev/" + name, nodes);
  }
  for (const std::string& name :
       ListDir(UnderRoot(dev_root, "/dev/nvidia-caps"))) {
    if (IsCapName(name)) AddNode(dev_root, "/dev/nvidia-caps/" + name, nodes);
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const HostDeviceNode& a, const HostDeviceNode& b) {
              return a.path < b.path;
            });
  return nodes;
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

// Directories ld.so.cache lists each known library in (by SONAME), in cache
// order; empty when there is no cache.
std::map<std::string, std::vector<std::string>> CacheDirs(
    const std::string& root) {
  std::map<std::string, std::vector<std::string>> dirs;
  std::string cache_path = UnderRoot(root, "/etc/ld.so.cache");
  absl::StatusOr<std::string> bytes = common::ReadFile(cache_path);
  if (!bytes.ok()) {
    GPULET_VLOG(1) << "no ld.so.cache: " << bytes.status().message();
    return dirs;
  }
  absl::StatusOr<std::vector<LdCacheEntry>> entries = ParseLdCache(*bytes);
  if (!entries.ok()) {
    GPULET_LOG(WARNING) << cache_path << ": " << entries.status().message()
                        << "; searching the standard library directories";
    return dirs;
  }
  for (const LdCacheEntry& entry : *entries) {
    if (!IsNativeLibrary(entry)) continue;
    for (const LibrarySpec& lib : KnownLibraries()) {
      if (absl::StartsWith(entry.name, std::string(lib.stem) + ".")) {
        dirs[lib.stem].push_back(Dirname(entry.path));
      }
    }
  }
  return dirs;
}

std::vector<HostFile> FindLibraries(const std::string& root,
                                    const std::string& version) {
  std::map<std::string, std::vector<std::string>> cache_dirs = CacheDirs(root);
  std::vector<HostFile> libraries;
  for (const LibrarySpec& lib : KnownLibraries()) {
    std::vector<std::string> dirs = cache_dirs[lib.stem];
    dirs.insert(dirs.end(), std::begin(kLibraryDirs), std::end(kLibraryDirs));
    std::string file = absl::StrCat(lib.stem, ".", version);
    for (const std::string& dir : dirs) {
      std::string path = (dir == "/" ? "" : dir) + "/" + file;
      if (IsRegularFile(UnderRoot(root, path))) {
        libraries.push_back(
            HostFile{path, UnderRoot(root, path), lib.capability});
        break;
      }
    }
  }
  std::sort(
      libraries.begin(), libraries.end(),
      [](const HostFile& a, const HostFile& b) { return a.path < b.path; });
  return libraries;
}

std::vector<HostFile> FindBinaries(const std::string& root) {
  std::vector<HostFile> binaries;
  for (const std::string& name : KnownBinaries()) {
    for (const char* dir : kBinaryDirs) {
      std::string path = absl::StrCat(dir, "/", name);
      if (IsRegularFile(UnderRoot(root, path))) {
        binaries.push_back(HostFile{path, UnderRoot(root, path), "utility"});
        break;
      }
    }
  }
  std::sort(
      binaries.begin(), binaries.end(),
      [](const HostFile& a, const HostFile& b) { return a.path < b.path; });
  return binaries;
}

absl::Status ReadProcFiles(const std::string& proc_root, Driver& driver) {
  std::string minors_path =
      UnderRoot(proc_root, "/proc/driver/nvidia-caps/mig-minors");
  absl::StatusOr<std::string> minors = common::ReadFile(minors_path);
  if (minors.ok()) {
    absl::StatusOr<MigMinors> parsed = MigMinors::Parse(*minors);
    if (!parsed.ok()) return common::Annotate(parsed.status(), minors_path);
    driver.mig_minors = *std::move(parsed);
  } else if (!absl::IsNotFound(minors.status())) {
    return minors.status();
  }
  absl::StatusOr<std::string> devices =
      common::ReadFile(UnderRoot(proc_root, "/proc/devices"));
  if (devices.ok()) driver.char_majors = ParseProcDevices(*devices);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> FindDriverBinary(const std::string& root,
                                             const std::string& name) {
  for (const char* dir : kBinaryDirs) {
    std::string path = UnderRoot(root, absl::StrCat(dir, "/", name));
    if (IsRegularFile(path)) return path;
  }
  return absl::NotFoundError(
      absl::StrCat(name, " not found in ", absl::StrJoin(kBinaryDirs, ", "),
                   " under the driver root ", root.empty() ? "/" : root));
}

std::string UnderRoot(const std::string& root, const std::string& path) {
  std::string prefix = root;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return prefix + path;
}

const std::vector<LibrarySpec>& KnownLibraries() {
  static const auto* const kLibraries = new std::vector<LibrarySpec>{
      {"libnvidia-ml.so", "utility"},
      {"libnvidia-cfg.so", "utility"},
      {"libnvidia-nscq.so", "utility"},
      {"libcuda.so", "compute"},
      {"libcudadebugger.so", "compute"},
      {"libnvidia-opencl.so", "compute"},
      {"libnvidia-gpucomp.so", "compute"},
      {"libnvidia-ptxjitcompiler.so", "compute"},
      {"libnvidia-fatbinaryloader.so", "compute"},
      {"libnvidia-allocator.so", "compute"},
      {"libnvidia-compiler.so", "compute"},
      {"libnvidia-pkcs11.so", "compute"},
      {"libnvidia-pkcs11-openssl3.so", "compute"},
      {"libnvidia-nvvm.so", "compute"},
      {"libnvidia-tileiras.so", "compute"},
      {"libvdpau_nvidia.so", "video"},
      {"libnvidia-encode.so", "video"},
      {"libnvidia-opticalflow.so", "video"},
      {"libnvcuvid.so", "video"},
  };
  return *kLibraries;
}

const std::vector<std::string>& KnownBinaries() {
  static const auto* const kBinaries = new std::vector<std::string>{
      "nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
      "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};
  return *kBinaries;
}

const HostDeviceNode* Driver::FindNode(const std::string& path) const {
  for (const HostDeviceNode& node : device_nodes) {
    if (node.path == path) return &node;
  }
  return nullptr;
}

absl::StatusOr<Driver> DiscoverDriver(const DriverOptions& options) {
  if (options.version.empty()) {
    return absl::InvalidArgumentError(
        "driver version is empty: cannot tell the driver's libraries apart");
  }
  Driver driver;
  driver.root = options.driver_root.empty() ? "/" : options.driver_root;
  driver.dev_root = options.dev_root.empty() ? driver.root : options.dev_root;
  driver.version = options.version;
  std::string proc_root =
      options.proc_root.empty() ? driver.root : options.proc_root;
  absl::Status root_ok = CheckDirectory("driver root", driver.root);
  if (!root_ok.ok()) return root_ok;
  absl::Status dev_ok = CheckDirectory("dev root", driver.dev_root);
  if (!dev_ok.ok()) return dev_ok;
  driver.device_nodes = FindDeviceNodes(driver.dev_root);
  driver.libraries = FindLibraries(driver.root, driver.version);
  driver.binaries = FindBinaries(driver.root);
  absl::Status proc = ReadProcFiles(proc_root, driver);
  if (!proc.ok()) return proc;
  return driver;
}

absl::StatusOr<Driver> DiscoverDriver(const std::string& driver_root,
                                      const std::string& dev_root,
                                      const std::string& driver_version) {
  return DiscoverDriver(
      DriverOptions{driver_root, dev_root, "", driver_version});
}

}  // namespace gpulet::cdi
