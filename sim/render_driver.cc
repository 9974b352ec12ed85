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
#include "sim/node_render.h"
#include "sim/render_fs.h"
#include "src/base/common/embedded_file.h"
#include "src/base/common/file_util.h"

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

std::string MpsControlScript(const std::string& version) {
  // -f serves in the foreground, -d in the background, as the real one;
  // commands travel through a FIFO where the real one has a socket.
  return absl::StrCat(
      "#!/bin/sh\n"
      "# nvidia-cuda-mps-control of the simulated NVIDIA driver ",
      version,
      " (gpulet sim render).\n"
      "# -f: the control daemon, in the foreground; -d: the same, in the\n"
      "# background; no argument: sends each line of standard input to the\n"
      "# daemon and waits for its answer. Everything is recorded in\n"
      "# $CUDA_MPS_LOG_DIRECTORY/control.log; while\n"
      "# $CUDA_MPS_LOG_DIRECTORY/refuse-start exists the daemon fails.\n"
      "pipe=\"${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}\"\n"
      "log=\"${CUDA_MPS_LOG_DIRECTORY:-/var/log/nvidia-mps}\"\n"
      "record() { echo \"$*\" >> \"$log/control.log\"; }\n"
      "serve() {\n"
      "  rm -f \"$pipe/control\"\n"
      "  mkfifo \"$pipe/control\" || exit 1\n"
      "  while :; do\n"
      "    while read -r cmd; do\n"
      "      reply=\n"
      "      case \"$cmd\" in\n"
      "      @*) reply=\"${cmd%% *}\"; reply=\"${reply#@}\"; cmd=\"${cmd#* }\" "
      ";;\n"
      "      esac\n"
      "      record \"command $cmd\"\n"
      "      if [ -n \"$reply\" ]; then echo ok > \"$reply\"; fi\n"
      "      if [ \"$cmd\" = quit ]; then\n"
      "        rm -f \"$pipe/control\"\n"
      "        exit 0\n"
      "      fi\n"
      "    done < \"$pipe/control\"\n"
      "  done\n"
      "}\n"
      "case \"$1\" in\n"
      "-f|-d)\n"
      "  mkdir -p \"$pipe\" \"$log\" || exit 1\n"
      "  if [ -e \"$log/refuse-start\" ]; then\n"
      "    record \"refused $1\"\n"
      "    exit 1\n"
      "  fi\n"
      "  record \"start $1 pid=$$ CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
      " CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$log\"\n"
      "  if [ \"$1\" = -d ]; then\n"
      "    serve < /dev/null > /dev/null 2>&1 &\n"
      "    exit 0\n"
      "  fi\n"
      "  serve\n"
      "  ;;\n"
      "'')\n"
      "  if [ ! -p \"$pipe/control\" ]; then\n"
      "    echo \"Cannot find MPS control daemon process\" >&2\n"
      "    exit 1\n"
      "  fi\n"
      "  # Each command waits for the daemon's answer, as the real\n"
      "  # control program does: through a FIFO of this client's own.\n"
      "  reply=\"$pipe/reply.$$\"\n"
      "  while read -r line; do\n"
      "    rm -f \"$reply\"\n"
      "    mkfifo \"$reply\" || exit 1\n"
      "    echo \"@$reply $line\" > \"$pipe/control\"\n"
      "    read -r answer < \"$reply\"\n"
      "    rm -f \"$reply\"\n"
      "  done\n"
      "  ;;\n"
      "*)\n"
      "  echo \"usage: nvidia-cuda-mps-control [-d | -f]\" >&2\n"
      "  exit 1\n"
      "  ;;\n"
      "esac\n");
}

std::string NvidiaSmiScript(const std::string& version) {
  return absl::StrCat(
      "#!/bin/sh\n"
      "# nvidia-smi of the simulated NVIDIA driver ",
      version,
      " (gpulet sim render).\n"
      "# Records each call's arguments, one line per call, in nvidia-smi.log\n"
      "# beside it; prints nothing and succeeds, unless nvidia-smi.refuse\n"
      "# exists beside it.\n"
      "dir=$(dirname \"$0\")\n"
      "echo \"$*\" >> \"$dir/nvidia-smi.log\"\n"
      "[ -e \"$dir/nvidia-smi.refuse\" ] && exit 1\n"
      "exit 0\n");
}

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
  if (absl::Status s =
          render::WriteFile(etc + "/ld.so.conf", absl::StrCat(kLibDir, "\n"));
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
    const std::string script =
        std::string_view(name) == "nvidia-cuda-mps-control"
            ? MpsControlScript(version)
        : std::string_view(name) == "nvidia-smi"
            ? NvidiaSmiScript(version)
            : absl::StrCat("#!/bin/sh\n# ", name,
                           " of the simulated NVIDIA driver ", version,
                           " (gpulet sim render): present so tools find it; "
                           "does nothing.\nexit 0\n");
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
