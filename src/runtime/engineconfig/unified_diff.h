// A unified diff (`diff -u` format, three lines of context) of two texts,
// for `gpulet runtime configure --dry-run`.
//
// Thread safety: stateless.
#pragma once

#include <string>

namespace gpulet::engineconfig {

// Empty when the texts are equal. `name` is used in the ---/+++ lines.
std::string UnifiedDiff(const std::string& before, const std::string& after,
                        const std::string& name);

}  // namespace gpulet::engineconfig
