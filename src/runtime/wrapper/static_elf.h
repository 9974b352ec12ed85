// Whether an executable is a statically linked ELF program: one without a
// PT_INTERP program header, so the kernel starts it without a dynamic
// loader. The ld-cache hook runs the host's ldconfig inside the container's
// root (ldcache_hook.h); a dynamically linked one would have its loader,
// and with it code, chosen by the image.
//
// Thread safety: pure apart from pread(2) on the caller's descriptor.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace gpulet::runtime {

// OK when `fd` (open for reading) holds a 32- or 64-bit ELF executable
// (ET_EXEC, or ET_DYN as static-pie programs are) without PT_INTERP.
// FailedPrecondition naming `path` and why otherwise: not ELF, truncated,
// not an executable, or dynamically linked (with the interpreter it names).
absl::Status CheckStaticElf(int fd, const std::string& path);

}  // namespace gpulet::runtime
