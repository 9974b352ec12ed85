#include "src/gpu/nvml/library_search.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gpulet::nvml {
namespace {

// NVIDIA's root.tryResolveLibrary list (k8s-device-plugin), same order.
constexpr const char* kLibraryDirs[] = {
    "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
    "/lib64",     "/lib/x86_64-linux-gnu",     "/lib/aarch64-linux-gnu",
    "/glibc/lib",
};

bool IsHostRoot(absl::string_view root) { return root.empty() || root == "/"; }

}  // namespace

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> CandidatePaths(absl::string_view driver_root) {
  absl::string_view root = driver_root;
  while (absl::ConsumeSuffix(&root, "/")) {
  }
  std::vector<std::string> paths;
  for (const char* dir : kLibraryDirs) {
    paths.push_back(absl::StrCat(root, dir, "/", kNvmlLibraryName));
  }
  return paths;
}

SearchPlan PlanLibrarySearch(const LoadOptions& options,
                             const IsFileFn& is_file) {
  SearchPlan plan;
  if (!options.library_path.empty()) {
    plan.attempts.push_back(options.library_path);
    plan.searched.push_back(options.library_path);
    return plan;
  }
  const bool host_root = IsHostRoot(options.driver_root);
  if (host_root) {
    // The dynamic linker's own search comes first, as in NVIDIA's plugin.
    plan.attempts.push_back(kNvmlLibraryName);
    plan.searched.push_back(
        absl::StrCat(kNvmlLibraryName, " (dynamic linker search path)"));
  }
  for (std::string& path : CandidatePaths(options.driver_root)) {
    plan.searched.push_back(path);
    if (is_file(path)) plan.attempts.push_back(std::move(path));
  }
  return plan;
}

}  // namespace gpulet::nvml
