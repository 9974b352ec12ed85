// The pure text builders of node_render.h: /proc and /sys contents, the
// driver's library list and glibc's ld.so.cache format.
#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "sim/node_render.h"

namespace gpulet::sim {
namespace {

// The driver numbers capabilities for this many GPU minors, GPU instances
// per GPU and compute instances per GPU instance.
constexpr unsigned kMaxGpuMinors = 32;
constexpr unsigned kMaxGpuInstances = 15;
constexpr unsigned kMaxComputeInstances = 8;
constexpr unsigned kFirstGpuCap = 3;  // after config (1) and monitor (2)
constexpr unsigned kCapsPerGpuInstance = 1 + kMaxComputeInstances;
constexpr unsigned kCapsPerGpu = kMaxGpuInstances * kCapsPerGpuInstance;

// glibc's _dl_cache_libcmp: digit runs compare as numbers.
int LibCompare(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = absl::ascii_isdigit(static_cast<unsigned char>(a[i]));
    const bool db = absl::ascii_isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      unsigned long long x = 0, y = 0;
      while (i < a.size() &&
             absl::ascii_isdigit(static_cast<unsigned char>(a[i]))) {
        x = x * 10 + static_cast<unsigned>(a[i++] - '0');
      }
      while (j < b.size() &&
             absl::ascii_isdigit(static_cast<unsigned char>(b[j]))) {
        y = y * 10 + static_cast<unsigned>(b[j++] - '0');
      }
      if (x != y) return x < y ? -1 : 1;
      continue;
    }
    if (da != db) return da ? 1 : -1;
    if (a[i] != b[j]) return a[i] < b[j] ? -1 : 1;
    ++i;
    ++j;
  }
  if (i < a.size()) return 1;
  if (j < b.size()) return -1;
  return 0;
}

void AppendU32(std::string& out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, sizeof b);
  out.append(b, sizeof b);
}

void AppendU64(std::string& out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, sizeof b);
  out.append(b, sizeof b);
}

}  // namespace

std::string SysfsBusId(const std::string& nvml_bus_id) {
  std::string id = absl::AsciiStrToLower(nvml_bus_id);
  const size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id = id.substr(colon - 4);
  return id;
}

std::string ProcVersionText(const Machine& machine) {
  return absl::StrCat("NVRM version: NVIDIA UNIX x86_64 Kernel Module  ",
                      machine.driver_version,
                      "  (gpulet NVML simulator)\n"
                      "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
}

std::string ProcGpuInformationText(const Gpu& gpu) {
  return absl::StrCat("Model: \t\t ", gpu.name,
                      "\nIRQ:   \t\t 0\nGPU UUID: \t ", gpu.uuid,
                      "\nVideo BIOS: \t ??.??.??.??.??\nBus Type: \t PCIe"
                      "\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff"
                      "\nBus Location: \t ",
                      SysfsBusId(gpu.bus_id), "\nDevice Minor: \t ", gpu.minor,
                      "\nGPU Excluded:\t No\n");
}

unsigned GpuInstanceCapMinor(unsigned gpu_minor, unsigned gi) {
  return kFirstGpuCap + gpu_minor * kCapsPerGpu + gi * kCapsPerGpuInstance;
}

unsigned ComputeInstanceCapMinor(unsigned gpu_minor, unsigned gi, unsigned ci) {
  return GpuInstanceCapMinor(gpu_minor, gi) + 1 + ci;
}

std::string MigMinorsText() {
  std::string text = "config 1\nmonitor 2\n";
  for (unsigned gpu = 0; gpu < kMaxGpuMinors; ++gpu) {
    for (unsigned gi = 0; gi < kMaxGpuInstances; ++gi) {
      absl::StrAppend(&text, "gpu", gpu, "/gi", gi, "/access ",
                      GpuInstanceCapMinor(gpu, gi), "\n");
      for (unsigned ci = 0; ci < kMaxComputeInstances; ++ci) {
        absl::StrAppend(&text, "gpu", gpu, "/gi", gi, "/ci", ci, "/access ",
                        ComputeInstanceCapMinor(gpu, gi, ci), "\n");
      }
    }
  }
  return text;
}

std::string ProcDevicesText(bool imex_channels) {
  std::string imex = imex_channels
                         ? absl::StrFormat("%3u nvidia-caps-imex-channels\n",
                                           kNvidiaCapsImexMajor)
                         : "";
  return absl::StrFormat(
      "Character devices:\n  1 mem\n  4 /dev/vc/0\n  4 tty\n  5 /dev/tty\n"
      "  5 /dev/console\n%3u nvidia-frontend\n%s%3u nvidia-caps\n"
      "%3u nvidia-uvm\n\nBlock devices:\n  7 loop\n  8 sd\n",
      kNvidiaMajor, imex, kNvidiaCapsMajor, kNvidiaUvmMajor);
}

std::vector<DriverLibrary> DriverLibraries(const std::string& version) {
  std::vector<DriverLibrary> libs = {
      {"libcuda.so", "libcuda.so.1"},
      {"libcudadebugger.so", "libcudadebugger.so.1"},
      {"libnvidia-ml.so", "libnvidia-ml.so.1"},
      {"libnvidia-cfg.so", "libnvidia-cfg.so.1"},
      {"libnvidia-opencl.so", "libnvidia-opencl.so.1"},
      {"libnvidia-ptxjitcompiler.so", "libnvidia-ptxjitcompiler.so.1"},
      {"libnvidia-allocator.so", "libnvidia-allocator.so.1"},
      {"libnvidia-nvvm.so", "libnvidia-nvvm.so.4"},
      {"libnvidia-encode.so", "libnvidia-encode.so.1"},
      {"libnvidia-opticalflow.so", "libnvidia-opticalflow.so.1"},
      {"libnvcuvid.so", "libnvcuvid.so.1"},
      {"libvdpau_nvidia.so", "libvdpau_nvidia.so.1"},
      {"libnvidia-fbc.so", "libnvidia-fbc.so.1"},
      {"libGLX_nvidia.so", "libGLX_nvidia.so.0"},
      {"libEGL_nvidia.so", "libEGL_nvidia.so.0"},
  };
  // These carry the full driver version in their SONAME.
  for (const char* stem :
       {"libnvidia-gpucomp.so", "libnvidia-pkcs11.so",
        "libnvidia-pkcs11-openssl3.so", "libnvidia-glcore.so",
        "libnvidia-tls.so", "libnvidia-eglcore.so", "libnvidia-glsi.so",
        "libnvidia-rtcore.so"}) {
    libs.push_back({stem, absl::StrCat(stem, ".", version)});
  }
  return libs;
}

std::string BuildLdCache(std::vector<LdCacheRecord> records) {
  // ld.so binary-searches the table, which ldconfig sorts in descending
  // library-name order.
  std::sort(records.begin(), records.end(),
            [](const LdCacheRecord& a, const LdCacheRecord& b) {
              return LibCompare(a.soname, b.soname) > 0;
            });
  constexpr size_t kHeaderSize = 48;
  constexpr size_t kEntrySize = 24;
  // FLAG_ELF_LIBC6 plus the 64-bit ABI flag of this machine.
#if defined(__aarch64__)
  constexpr int32_t kFlags = 0x0003 | 0x0a00;
#else
  constexpr int32_t kFlags = 0x0003 | 0x0300;
#endif
  // Strings are addressed from the start of the file (the header).
  std::string strings;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  const size_t base = kHeaderSize + records.size() * kEntrySize;
  for (const LdCacheRecord& r : records) {
    const auto key = static_cast<uint32_t>(base + strings.size());
    strings.append(r.soname).push_back('\0');
    const auto value = static_cast<uint32_t>(base + strings.size());
    strings.append(r.path).push_back('\0');
    offsets.emplace_back(key, value);
  }
  std::string out = "glibc-ld.so.cache1.1";
  AppendU32(out, static_cast<uint32_t>(records.size()));
  AppendU32(out, static_cast<uint32_t>(strings.size()));
  out.push_back(static_cast<char>(2));  // little endian (x86_64, aarch64)
  out.append(3, '\0');
  AppendU32(out, 0);  // no extension section
  for (int i = 0; i < 3; ++i) AppendU32(out, 0);
  for (const auto& [key, value] : offsets) {
    AppendU32(out, static_cast<uint32_t>(kFlags));
    AppendU32(out, key);
    AppendU32(out, value);
    AppendU32(out, 0);  // osversion
    AppendU64(out, 0);  // hwcap
  }
  return out + strings;
}

}  // namespace gpulet::sim
