#include "src/runtime/wrapper/static_elf.h"

#include <elf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace gpulet::runtime {
namespace {

// Exactly `size` bytes at `offset`, or false.
bool ReadAt(int fd, void* buf, size_t size, off_t offset) {
  char* out = static_cast<char*>(buf);
  while (size > 0) {
    ssize_t n = ::pread(fd, out, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

absl::Status NotStatic(const std::string& path, absl::string_view why) {
  return absl::FailedPreconditionError(
      absl::StrCat(path, ": ", why,
                   "; a statically linked ldconfig is "
                   "needed to run it inside the container's root"));
}

// Ehdr/Phdr are Elf32_* or Elf64_*.
template <typename Ehdr, typename Phdr>
absl::Status CheckProgramHeaders(int fd, const std::string& path) {
  Ehdr header;
  if (!ReadAt(fd, &header, sizeof(header), 0)) {
    return NotStatic(path, "truncated ELF header");
  }
  if (header.e_type != ET_EXEC && header.e_type != ET_DYN) {
    return NotStatic(path, "not an ELF executable");
  }
  if (header.e_phentsize != sizeof(Phdr) || header.e_phnum == 0) {
    return NotStatic(path, "no program headers");
  }
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Phdr ph;
    off_t at = static_cast<off_t>(header.e_phoff + i * sizeof(Phdr));
    if (!ReadAt(fd, &ph, sizeof(ph), at)) {
      return NotStatic(path, "truncated program headers");
    }
    if (ph.p_type != PT_INTERP) continue;
    char interp[256] = {};
    size_t n =
        ph.p_filesz < sizeof(interp) - 1 ? ph.p_filesz : sizeof(interp) - 1;
    if (!ReadAt(fd, interp, n, static_cast<off_t>(ph.p_offset))) n = 0;
    interp[n] = '\0';
    return NotStatic(
        path, absl::StrCat("dynamically linked (interpreter ", interp, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckStaticElf(int fd, const std::string& path) {
  unsigned char ident[EI_NIDENT];
  if (!ReadAt(fd, ident, sizeof(ident), 0) ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return NotStatic(path, "not an ELF file");
  }
  if (ident[EI_CLASS] == ELFCLASS64) {
    return CheckProgramHeaders<Elf64_Ehdr, Elf64_Phdr>(fd, path);
  }
  if (ident[EI_CLASS] == ELFCLASS32) {
    return CheckProgramHeaders<Elf32_Ehdr, Elf32_Phdr>(fd, path);
  }
  return NotStatic(path, "unknown ELF class");
}

}  // namespace gpulet::runtime
