// The driver root of a rendered node: the driver's user-space libraries
// named for the version NVML reports (tiny real ELF objects whose SONAME is
// the driver's), their SONAME and development links, the utility binaries,
// the GSP firmware directory and an ld.so.cache listing the libraries.
#include <set>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/common/embedded_file.h"
#include "src/common/file_util.h"
#include "src/nvml/sim/node_render.h"
#include "src/nvml/sim/render_fs.h"

namespace gpulet::sim {
namespace embedded_stub {
// The stub library built with a placeholder SONAME (CMakeLists.txt).
const std::vector<common::EmbeddedFile>& EmbeddedFiles();
}  // namespace embedded_stub

namespace {

#if defined(__aarch64__)
constexpr char kLibDir[] = "/usr/lib/aarch64-linux-gnu";
#else
constexpr char kLibDir[] = "/usr/lib/x86_64-linux-gnu";
#endif
// Must equal GPULET_SIM_STUB_SONAME in CMakeLists.txt.
constexpr std::string_view kStubSoname =
    "libgpulet-sim-stub-soname-placeholder-0123456789abcdef0123456789.so";

constexpr const char* kBinaries[] = {
    "nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
    "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};

absl::StatusOr<std::string> StubWithSoname(const std::string& soname) {
  const auto& files = embedded_stub::EmbeddedFiles();
  if (files.empty()) {
    return absl::InternalError("the driver library stub is not built in");
  }
  std::string bytes(files.front().contents);
  const size_t at = bytes.find(kStubSoname);
  if (at == std::string::npos || soname.size() > kStubSoname.size()) {
    return absl::InternalError(absl::StrCat(
        "cannot give the driver library stub the SONAME ", soname));
  }
  // The SONAME lives in .dynstr, NUL-terminated: a shorter name padded
  // with NULs reads the same to the dynamic linker and to ldconfig.
  bytes.replace(at, kStubSoname.size(), kStubSoname.size(), '\0');
  bytes.replace(at, soname.size(), soname);
  return bytes;
}

// A library file name of `stem` for some other driver version.
bool IsOtherVersion(const std::string& name, const std::set<std::string>& keep,
                    const std::vector<DriverLibrary>& libs) {
  if (keep.contains(name)) return false;
  for (const DriverLibrary& lib : libs) {
    if (absl::StartsWith(name, lib.stem + ".")) return true;
  }
  return false;
}

}  // namespace

absl::Status RenderDriverRoot(const Machine& machine,
                              const std::string& driver_root,
                              const std::string& nvml_library) {
  const std::string& version = machine.driver_version;
  if (version.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(machine.source, ": the machine gives no driver version"));
  }
  const std::string lib_dir = driver_root + kLibDir;
  if (absl::Status s = render::EnsureDir(lib_dir); !s.ok()) return s;
  const std::vector<DriverLibrary> libs = DriverLibraries(version);
  std::vector<LdCacheRecord> cache;
  std::set<std::string> keep;
  for (const DriverLibrary& lib : libs) {
    const std::string file = absl::StrCat(lib.stem, ".", version);
    absl::StatusOr<std::string> bytes =
        lib.stem == "libnvidia-ml.so" && !nvml_library.empty()
            ? common::ReadFile(nvml_library)
            : StubWithSoname(lib.soname);
    if (!bytes.ok()) return bytes.status();
    if (absl::Status s = render::WriteFile(lib_dir + "/" + file, *bytes, 0755);
        !s.ok()) {
      return s;
    }
    keep.insert(file);
    if (lib.soname != file) {
      keep.insert(lib.soname);
      if (absl::Status s = render::Symlink(file, lib_dir + "/" + lib.soname);
          !s.ok()) {
        return s;
      }
    }
    keep.insert(lib.stem);
    if (absl::Status s = render::Symlink(lib.soname, lib_dir + "/" + lib.stem);
        !s.ok()) {
      return s;
    }
    // As the container sees the driver root mounted at "/".
    cache.push_back({lib.soname, absl::StrCat(kLibDir, "/", lib.soname)});
  }
  if (absl::Status s = render::RemoveStale(
          lib_dir,
          [&](const std::string& n) { return IsOtherVersion(n, keep, libs); });
      !s.ok()) {
    return s;
  }
  const std::string etc = driver_root + "/etc";
  if (absl::Status s = render::EnsureDir(etc); !s.ok()) return s;
  if (absl::Status s = render::WriteFile(etc + "/ld.so.conf",
                                         absl::StrCat(kLibDir, "\n"));
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          render::WriteFile(etc + "/ld.so.cache", BuildLdCache(cache));
      !s.ok()) {
    return s;
  }
  const std::string bin = driver_root + "/usr/bin";
  if (absl::Status s = render::EnsureDir(bin); !s.ok()) return s;
  for (const char* name : kBinaries) {
    const std::string script = absl::StrCat(
        "#!/bin/sh\n# ", name, " of the simulated NVIDIA driver ", version,
        " (gpulet sim render): present so tools find it; does nothing.\n"
        "exit 0\n");
    if (absl::Status s = render::WriteFile(bin + "/" + name, script, 0755);
        !s.ok()) {
      return s;
    }
  }
  const std::string firmware =
      absl::StrCat(driver_root, "/lib/firmware/nvidia");
  if (absl::Status s = render::RemoveStale(
          firmware, [&](const std::string& n) { return n != version; });
      !s.ok()) {
    return s;
  }
  const std::string gsp = absl::StrCat(firmware, "/", version);
  if (absl::Status s = render::EnsureDir(gsp); !s.ok()) return s;
  for (const char* name : {"gsp_ga10x.bin", "gsp_tu10x.bin"}) {
    if (absl::Status s = render::WriteFile(gsp + "/" + name, ""); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace gpulet::sim
