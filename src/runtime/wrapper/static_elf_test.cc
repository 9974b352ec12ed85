#include "src/runtime/wrapper/static_elf.h"

#include <elf.h>
#include <fcntl.h>

#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/unique_fd.h"
#include "src/runtime/testing/test_dir.h"

namespace gpulet::runtime {
namespace {

using ::testing::HasSubstr;

absl::Status Check(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return absl::NotFoundError(path);
  return CheckStaticElf(fd.get(), path);
}

// A 64-bit ELF executable whose program headers are `types`.
std::string Elf64(uint16_t e_type, const std::vector<uint32_t>& types) {
  Elf64_Ehdr h = {};
  std::memcpy(h.e_ident, ELFMAG, SELFMAG);
  h.e_ident[EI_CLASS] = ELFCLASS64;
  h.e_type = e_type;
  h.e_phoff = sizeof(h);
  h.e_phentsize = sizeof(Elf64_Phdr);
  h.e_phnum = static_cast<uint16_t>(types.size());
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  const std::string interp = "/lib64/ld-linux-x86-64.so.2";
  for (uint32_t type : types) {
    Elf64_Phdr ph = {};
    ph.p_type = type;
    ph.p_offset = sizeof(h) + types.size() * sizeof(Elf64_Phdr);
    ph.p_filesz = interp.size() + 1;
    out.append(reinterpret_cast<const char*>(&ph), sizeof(ph));
  }
  out.append(interp);
  out.push_back('\0');
  return out;
}

TEST(CheckStaticElfTest, TellsStaticFromDynamic) {
  testing::TempDir dir;
  EXPECT_TRUE(Check(dir.Write("static", Elf64(ET_EXEC, {PT_LOAD}))).ok());
  EXPECT_TRUE(Check(dir.Write("pie", Elf64(ET_DYN, {PT_LOAD, PT_NOTE}))).ok());
  absl::Status dynamic =
      Check(dir.Write("dynamic", Elf64(ET_DYN, {PT_PHDR, PT_INTERP, PT_LOAD})));
  EXPECT_THAT(dynamic.message(),
              HasSubstr("dynamic: dynamically linked (interpreter "
                        "/lib64/ld-linux-x86-64.so.2)"));
  EXPECT_EQ(dynamic.code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CheckStaticElfTest, RejectsWhatIsNotAnExecutable) {
  testing::TempDir dir;
  EXPECT_THAT(Check(dir.Write("script", "#!/bin/sh\n")).message(),
              HasSubstr("script: not an ELF file"));
  EXPECT_THAT(Check(dir.Write("object", Elf64(ET_REL, {PT_LOAD}))).message(),
              HasSubstr("not an ELF executable"));
  EXPECT_THAT(Check(dir.Write("cut", Elf64(ET_EXEC, {PT_LOAD}).substr(0, 30)))
                  .message(),
              HasSubstr("truncated ELF header"));
  std::string headers_cut = Elf64(ET_EXEC, {PT_LOAD, PT_INTERP});
  headers_cut.resize(sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr) + 4);
  EXPECT_THAT(Check(dir.Write("phdrs", headers_cut)).message(),
              HasSubstr("truncated program headers"));
  EXPECT_THAT(Check(dir.Write("empty", "")).message(),
              HasSubstr("not an ELF file"));
}

// glibc links ldconfig statically (Debian's is static-pie); the shell is
// dynamically linked.
TEST(CheckStaticElfTest, TheHostsPrograms) {
  EXPECT_TRUE(Check("/sbin/ldconfig").ok()) << Check("/sbin/ldconfig");
  EXPECT_THAT(Check("/bin/sh").message(), HasSubstr("dynamically linked"));
}

}  // namespace
}  // namespace gpulet::runtime
