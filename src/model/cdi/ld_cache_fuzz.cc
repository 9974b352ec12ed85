// libFuzzer target: ParseLdCache on arbitrary bytes must return a value or
// an error, never crash or read out of bounds.
#include <cstddef>
#include <cstdint>

#include "src/model/cdi/ld_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto entries = gpulet::cdi::ParseLdCache(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  if (entries.ok()) {
    for (const auto& entry : *entries)
      (void)gpulet::cdi::IsNativeLibrary(entry);
  }
  return 0;
}
