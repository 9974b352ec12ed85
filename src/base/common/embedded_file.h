// EmbeddedFile: a data file compiled into a binary by cmake/embed.cmake
// (machine profiles, schemas). Immutable, static storage; thread-safe.
#pragma once

#include <string_view>

namespace gpulet::common {

struct EmbeddedFile {
  std::string_view name;      // base name without extension, e.g. "dgx-h100"
  std::string_view contents;  // the file's bytes
};

}  // namespace gpulet::common
