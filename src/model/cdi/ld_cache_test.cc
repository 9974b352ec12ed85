#include "src/model/cdi/ld_cache.h"

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"
#include "src/model/testing/test_root.h"

namespace gpulet::cdi {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr int32_t kNative = kLdFlagElfLibc6 |
#if defined(__aarch64__)
                            kLdFlagAarch64Lib64;
#else
                            kLdFlagX8664Lib64;
#endif

void Put32(std::string& out, uint32_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void Put64(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// A new-format section, strings relative to its own start.
std::string NewSection(const std::vector<LdCacheEntry>& entries,
                       uint8_t endian = 2) {
  std::string header = "glibc-ld.so.cache1.1";
  std::string strings;
  size_t strings_at = 48 + entries.size() * 24;
  std::string table;
  for (const LdCacheEntry& e : entries) {
    Put32(table, static_cast<uint32_t>(e.flags));
    Put32(table, static_cast<uint32_t>(strings_at + strings.size()));
    strings += e.name + '\0';
    Put32(table, static_cast<uint32_t>(strings_at + strings.size()));
    strings += e.path + '\0';
    Put32(table, 0);
    Put64(table, e.hwcap);
  }
  Put32(header, static_cast<uint32_t>(entries.size()));
  Put32(header, static_cast<uint32_t>(strings.size()));
  header += static_cast<char>(endian);
  header.append(3, '\0');
  Put32(header, 0);
  header.append(12, '\0');
  return header + table + strings;
}

// The old format, strings relative to the end of its table; `tail` follows.
std::string OldFormat(const std::vector<LdCacheEntry>& entries,
                      const std::string& tail_new = "") {
  std::string out = "ld.so-1.7.0";
  out += '\0';
  Put32(out, static_cast<uint32_t>(entries.size()));
  std::string strings;
  for (const LdCacheEntry& e : entries) {
    Put32(out, static_cast<uint32_t>(e.flags));
    Put32(out, static_cast<uint32_t>(strings.size()));
    strings += e.name + '\0';
    Put32(out, static_cast<uint32_t>(strings.size()));
    strings += e.path + '\0';
  }
  if (!tail_new.empty()) {
    out.append((8 - out.size() % 8) % 8, '\0');
    return out + tail_new;
  }
  return out + strings;
}

const std::vector<LdCacheEntry> kEntries = {
    {"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", kNative, 0},
    {"libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so.1", kLdFlagElfLibc6,
     0},
    {"libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", kNative, 7},
};

TEST(ParseLdCacheTest, ReadsEveryLayout) {
  std::vector<LdCacheEntry> old_entries = kEntries;
  for (LdCacheEntry& e : old_entries) e.hwcap = 0;
  EXPECT_EQ(ParseLdCache(NewSection(kEntries)).value(), kEntries);
  EXPECT_EQ(ParseLdCache(OldFormat(kEntries)).value(), old_entries);
  EXPECT_EQ(ParseLdCache(OldFormat(old_entries, NewSection(kEntries))).value(),
            kEntries);
  EXPECT_TRUE(ParseLdCache(NewSection({})).value().empty());
}

TEST(ParseLdCacheTest, TellsNativeLibrariesApart) {
  EXPECT_TRUE(IsNativeLibrary(kEntries[0]));
  EXPECT_FALSE(IsNativeLibrary(kEntries[1]));             // 32-bit
  EXPECT_FALSE(IsNativeLibrary({"x", "/x", 0x0001, 0}));  // libc5
}

TEST(ParseLdCacheTest, RejectsCorruptCaches) {
  std::string good = NewSection(kEntries);
  std::string bad_key = good;
  uint32_t far = 1u << 30;
  std::memcpy(&bad_key[48 + 4], &far, 4);
  std::string bad_count = good;
  uint32_t many = 0xffffffffu;
  std::memcpy(&bad_count[20], &many, 4);
  std::string unterminated = good.substr(0, good.size() - 1);
  std::string old_bad_count = OldFormat(kEntries);
  std::memcpy(&old_bad_count[12], &many, 4);
  struct Case {
    const char* name;
    std::string bytes;
    const char* error;
  };
  const Case cases[] = {
      {"empty", "", "bad magic"},
      {"bad magic", "not a cache at all, not even close to one", "bad magic"},
      {"truncated header", good.substr(0, 30), "truncated header"},
      {"truncated table", good.substr(0, 60), "truncated"},
      {"count too big", bad_count, "truncated"},
      {"offset out of range", bad_key, "outside the file"},
      {"unterminated string", unterminated, "unterminated string"},
      {"wrong byte order", NewSection(kEntries, 3), "byte order"},
      {"old truncated header", std::string("ld.so-1.7.0\0", 12),
       "truncated header"},
      {"old count too big", old_bad_count, "truncated"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<LdCacheEntry>> parsed = ParseLdCache(c.bytes);
    ASSERT_FALSE(parsed.ok()) << c.name;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.error))
        << c.name;
  }
}

TEST(ParseLdCacheTest, EveryTruncationIsAnErrorOrAPrefix) {
  for (const std::string& full : {NewSection(kEntries), OldFormat(kEntries),
                                  OldFormat(kEntries, NewSection(kEntries))}) {
    for (size_t n = 0; n < full.size(); ++n) {
      absl::StatusOr<std::vector<LdCacheEntry>> parsed =
          ParseLdCache(full.substr(0, n));
      if (parsed.ok()) {
        EXPECT_LE(parsed->size(), kEntries.size());
      }
    }
  }
}

// A cache written by the real ldconfig over real ELF objects.
TEST(ParseLdCacheTest, ReadsWhatLdconfigWrites) {
  if (!testing::IsRoot()) {
    GTEST_SKIP() << "ldconfig -r chroots: needs root";
  }
  testing::TempRoot root;
  const std::string dir = "/usr/lib/x86_64-linux-gnu";
  root.Copy(std::string(GPULET_CDI_FAKE_LIB_DIR) + "/libcuda.so." +
                GPULET_CDI_FAKE_DRIVER_VERSION,
            dir + "/libcuda.so." + GPULET_CDI_FAKE_DRIVER_VERSION);
  root.Write("/etc/ld.so.conf", dir + "\n");
  std::string command = "ldconfig -r " + root.path() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  absl::StatusOr<std::string> bytes =
      common::ReadFile(root.Under("/etc/ld.so.cache"));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<std::vector<LdCacheEntry>> parsed = ParseLdCache(*bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].name, "libcuda.so.1");
  EXPECT_EQ((*parsed)[0].path, dir + "/libcuda.so.1");
#if defined(__x86_64__)
  EXPECT_TRUE(IsNativeLibrary((*parsed)[0]));
#endif
}

}  // namespace
}  // namespace gpulet::cdi
