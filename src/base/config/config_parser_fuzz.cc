// libFuzzer target for ParseConfig: no input may crash, hang or throw, and
// every configuration the parser accepts must satisfy the rules the rest of
// gpulet relies on (checked here; a violation aborts the run).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "src/base/config/names.h"
#include "src/base/config/parser.h"
#include "src/base/config/resolve.h"
#include "src/base/config/validate.h"

namespace {

using gpulet::config::Config;
using gpulet::config::ReplicatedResources;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckSection(const ReplicatedResources& section) {
  Check(!section.resources.empty());
  for (const auto& r : section.resources) {
    Check(gpulet::config::CheckQualifiedResourceName(r.name).ok());
    Check(r.rename.empty() ||
          gpulet::config::CheckQualifiedResourceName(r.rename).ok());
    Check(r.replicas >= 2 && r.replicas <= gpulet::config::kMaxReplicas);
    Check(!section.rename_by_default || !r.rename.empty());
  }
}

void CheckConfig(const Config& c) {
  Check(c.version == gpulet::config::kConfigVersion);
  Check(!c.flags.plugin.device_list_strategy.empty());
  Check(gpulet::config::ValidateValues(c).ok());
  if (c.sharing.time_slicing) CheckSection(*c.sharing.time_slicing);
  if (c.sharing.mps) CheckSection(*c.sharing.mps);
  for (const auto& [path, origin] : c.origins) {
    Check(!path.empty() && origin.source == "fuzz.yaml" && origin.line >= 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Config> config =
      gpulet::config::ParseConfig(text, "fuzz.yaml");
  if (!config.ok()) {
    Check(config.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  CheckConfig(*config);
  absl::StatusOr<Config> resolved = gpulet::config::Resolve(
      {}, [](const std::string&) { return std::nullopt; }, *config);
  if (resolved.ok()) {
    Check(!resolved->flags.nvidia_dev_root.empty());
    Check(gpulet::config::Validate(*resolved).ok());
  }
  return 0;
}
