#include "src/model/cdi/ld_cache.h"

#include <bit>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gpulet::cdi {
namespace {

constexpr absl::string_view kOldMagic = "ld.so-1.7.0";        // 11 bytes
constexpr absl::string_view kNewMagic = "glibc-ld.so.cache";  // 17 bytes
constexpr absl::string_view kNewVersion = "1.1";
// Old header: magic[11], pad to 4, uint32 nlibs; entries of
// {int32 flags; uint32 key, value}.
constexpr size_t kOldHeaderSize = 16;
constexpr size_t kOldEntrySize = 12;
// New header: magic[17] version[3] uint32 nlibs, uint32 len_strings,
// uint8 flags, pad[3], uint32 extension_offset, uint32 unused[3]; entries of
// {int32 flags; uint32 key, value, osversion; uint64 hwcap}.
constexpr size_t kNewHeaderSize = 48;
constexpr size_t kNewEntrySize = 24;
constexpr size_t kNewAlign = 8;
// The new header's byte-order flag (glibc's cache_file_new.flags).
constexpr uint8_t kEndianUnset = 0;
constexpr uint8_t kEndianLittle = 2;
constexpr uint8_t kEndianBig = 3;

uint32_t U32(absl::string_view b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}
uint64_t U64(absl::string_view b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

absl::Status Corrupt(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("corrupt ld.so.cache: ", what));
}

// The NUL-terminated string at `base + offset`, within `bytes`.
absl::StatusOr<std::string> StringAt(absl::string_view bytes, size_t base,
                                     uint32_t offset) {
  size_t at = base + offset;
  if (at < base || at >= bytes.size()) {
    return Corrupt(absl::StrCat("string offset ", offset, " outside the file"));
  }
  size_t end = bytes.find('\0', at);
  if (end == absl::string_view::npos) {
    return Corrupt(absl::StrCat("unterminated string at offset ", offset));
  }
  return std::string(bytes.substr(at, end - at));
}

// Checks that `count` entries of `size` bytes fit after `start`.
absl::Status CheckTable(absl::string_view bytes, size_t start, uint32_t count,
                        size_t size, absl::string_view what) {
  if (start > bytes.size() || (bytes.size() - start) / size < count) {
    return Corrupt(
        absl::StrCat(what, " table of ", count, " entries is truncated"));
  }
  return absl::OkStatus();
}

// The new-format section starting at `start`; its strings are relative to
// `start` (glibc: cache_data = the new header).
absl::StatusOr<std::vector<LdCacheEntry>> ParseNew(absl::string_view bytes,
                                                   size_t start) {
  if (bytes.size() - start < kNewHeaderSize) return Corrupt("truncated header");
  absl::string_view header = bytes.substr(start, kNewHeaderSize);
  if (!absl::StartsWith(header, kNewMagic) ||
      header.substr(kNewMagic.size(), kNewVersion.size()) != kNewVersion) {
    return Corrupt("bad magic");
  }
  uint8_t endian = static_cast<uint8_t>(header[28]);
  uint8_t native =
      std::endian::native == std::endian::little ? kEndianLittle : kEndianBig;
  if (endian != kEndianUnset && endian != native) {
    return Corrupt(absl::StrCat("byte order flag ", endian,
                                " does not match this machine"));
  }
  uint32_t count = U32(header, 20);
  size_t table = start + kNewHeaderSize;
  absl::Status fits = CheckTable(bytes, table, count, kNewEntrySize, "library");
  if (!fits.ok()) return fits;
  std::vector<LdCacheEntry> entries;
  entries.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    size_t at = table + i * kNewEntrySize;
    LdCacheEntry entry;
    entry.flags = static_cast<int32_t>(U32(bytes, at));
    absl::StatusOr<std::string> key =
        StringAt(bytes, start, U32(bytes, at + 4));
    if (!key.ok()) return key.status();
    absl::StatusOr<std::string> value =
        StringAt(bytes, start, U32(bytes, at + 8));
    if (!value.ok()) return value.status();
    entry.name = *std::move(key);
    entry.path = *std::move(value);
    entry.hwcap = U64(bytes, at + 16);
    entries.push_back(std::move(entry));
  }
  return entries;
}

// The old format; a new section may follow its entries (aligned to 8), and
// then only the new section is used, as glibc does.
absl::StatusOr<std::vector<LdCacheEntry>> ParseOld(absl::string_view bytes) {
  if (bytes.size() < kOldHeaderSize) return Corrupt("truncated header");
  uint32_t count = U32(bytes, 12);
  absl::Status fits =
      CheckTable(bytes, kOldHeaderSize, count, kOldEntrySize, "library");
  if (!fits.ok()) return fits;
  size_t strings = kOldHeaderSize + size_t{count} * kOldEntrySize;
  size_t new_start = (strings + kNewAlign - 1) / kNewAlign * kNewAlign;
  if (new_start <= bytes.size() &&
      absl::StartsWith(bytes.substr(new_start), kNewMagic)) {
    return ParseNew(bytes, new_start);
  }
  std::vector<LdCacheEntry> entries;
  entries.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    size_t at = kOldHeaderSize + i * kOldEntrySize;
    absl::StatusOr<std::string> key =
        StringAt(bytes, strings, U32(bytes, at + 4));
    if (!key.ok()) return key.status();
    absl::StatusOr<std::string> value =
        StringAt(bytes, strings, U32(bytes, at + 8));
    if (!value.ok()) return value.status();
    entries.push_back(LdCacheEntry{*std::move(key), *std::move(value),
                                   static_cast<int32_t>(U32(bytes, at)), 0});
  }
  return entries;
}

}  // namespace

absl::StatusOr<std::vector<LdCacheEntry>> ParseLdCache(
    absl::string_view bytes) {
  if (absl::StartsWith(bytes, kNewMagic)) return ParseNew(bytes, 0);
  if (absl::StartsWith(bytes, kOldMagic)) return ParseOld(bytes);
  return Corrupt("bad magic (neither glibc-ld.so.cache1.1 nor ld.so-1.7.0)");
}

bool IsNativeLibrary(const LdCacheEntry& entry) {
  if ((entry.flags & kLdFlagTypeMask) != kLdFlagElfLibc6) return false;
#if defined(__x86_64__)
  return (entry.flags & kLdFlagAbiMask) == kLdFlagX8664Lib64;
#elif defined(__aarch64__)
  return (entry.flags & kLdFlagAbiMask) == kLdFlagAarch64Lib64;
#else
  return true;
#endif
}

}  // namespace gpulet::cdi
