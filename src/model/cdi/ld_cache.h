// Parsing glibc's /etc/ld.so.cache: the list of shared libraries ldconfig
// found, as (SONAME or file name, path) pairs. Both layouts glibc has written
// are understood: the new "glibc-ld.so.cache1.1" format (glibc >= 2.32 writes
// only this) and the old "ld.so-1.7.0" format, alone or followed by a new
// section (the "compat" layout older glibc wrote).
//
// ParseLdCache takes bytes and never reads a file, so it can be fuzzed; every
// offset and count is checked against the buffer. Paths are as ldconfig
// recorded them, i.e. relative to the root ldconfig ran in (`ldconfig -r`).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpulet::cdi {

struct LdCacheEntry {
  std::string name;    // "libcuda.so.1"
  std::string path;    // "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
  int32_t flags = 0;   // FLAG_* from glibc's ldconfig.h: type and ABI
  uint64_t hwcap = 0;  // new format only

  bool operator==(const LdCacheEntry&) const = default;
};

// glibc's flag values.
inline constexpr int32_t kLdFlagTypeMask = 0x00ff;
inline constexpr int32_t kLdFlagElfLibc6 = 0x0003;
inline constexpr int32_t kLdFlagAbiMask = 0xff00;
inline constexpr int32_t kLdFlagX8664Lib64 = 0x0300;
inline constexpr int32_t kLdFlagAarch64Lib64 = 0x0a00;

// The entries in cache order. InvalidArgument for bad magic, a truncated
// header or entry table, a string offset outside the buffer, an unterminated
// string, or a byte order other than this machine's.
absl::StatusOr<std::vector<LdCacheEntry>> ParseLdCache(absl::string_view bytes);

// Whether an entry is a glibc (libc6) library of this process's ABI (x86-64
// or aarch64; on other machines any libc6 entry).
bool IsNativeLibrary(const LdCacheEntry& entry);

}  // namespace gpulet::cdi
