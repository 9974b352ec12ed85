#include "src/runtime/wrapper/spec_resolver.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"
#include "src/model/cdi/spec_codec.h"
#include "src/model/cdi/validate.h"

namespace gpulet::runtime {
namespace {

bool IsSpecFileName(const std::string& name) {
  return absl::EndsWith(name, ".json") || absl::EndsWith(name, ".yaml") ||
         absl::EndsWith(name, ".yml");
}

// Spec file names in `dir`, sorted; an absent dir has none.
absl::StatusOr<std::vector<std::string>> ListSpecFiles(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return names;
    return common::ErrnoToStatus(errno, absl::StrCat("CDI spec dir ", dir));
  }
  while (const dirent* entry = ::readdir(d)) {
    std::string name = entry->d_name;
    if (name[0] != '.' && IsSpecFileName(name)) names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

struct Found {
  const cdi::Spec* spec = nullptr;
  const cdi::Device* device = nullptr;
};

// The last definition of kind=name, which has the highest priority.
Found FindDevice(const LoadedSpecs& specs, const std::string& kind,
                 const std::string& name) {
  Found found;
  for (const SpecFile& file : specs.specs) {
    if (file.spec.kind != kind) continue;
    for (const cdi::Device& device : file.spec.devices) {
      if (device.name == name) found = {&file.spec, &device};
    }
  }
  return found;
}

// The message reaches the pod's events, so it names what was asked and
// nothing else: not the devices the kind has (another pod's claim devices
// share a kind), not the spec files on the node.
absl::Status UnknownDevice(const std::string& kind,
                           const std::string& qualified) {
  return absl::NotFoundError(
      absl::StrCat("unknown CDI device ", qualified, " (kind ", kind, ")"));
}

}  // namespace

absl::StatusOr<cdi::Spec> ParseAndValidateSpec(const std::string& text,
                                               const std::string& path) {
  absl::StatusOr<cdi::Spec> spec = cdi::ParseSpec(text, path);
  if (!spec.ok()) return spec.status();
  if (absl::Status s = cdi::Validate(*spec); !s.ok()) {
    return common::Annotate(s, path);
  }
  return spec;
}

absl::StatusOr<LoadedSpecs> LoadSpecDirs(const std::vector<std::string>& dirs,
                                         const SpecParser& parser) {
  LoadedSpecs loaded;
  for (const std::string& dir : dirs) {
    absl::StatusOr<std::vector<std::string>> names = ListSpecFiles(dir);
    if (!names.ok()) return names.status();
    for (const std::string& name : *names) {
      const std::string path = absl::StrCat(dir, "/", name);
      absl::StatusOr<std::string> text = common::ReadFile(path);
      if (!text.ok()) {
        loaded.errors.push_back(std::string(text.status().message()));
        continue;
      }
      absl::StatusOr<cdi::Spec> spec = parser(*text, path);
      if (!spec.ok()) {
        loaded.errors.push_back(
            absl::StrCat(path, ": ", spec.status().message()));
        continue;
      }
      loaded.specs.push_back({path, *std::move(spec)});
    }
  }
  return loaded;
}

absl::StatusOr<std::vector<cdi::ContainerEdits>> ResolveEdits(
    const LoadedSpecs& specs, const GpuRequest& request,
    const std::string& default_kind) {
  std::vector<cdi::ContainerEdits> edits;
  std::set<const cdi::Spec*> applied;
  auto add_spec_edits = [&](const cdi::Spec* spec) {
    if (!applied.insert(spec).second) return;
    if (!spec->edits.empty()) edits.push_back(spec->edits);
  };
  if (request.driver_only) {
    const cdi::Spec* last = nullptr;
    for (const SpecFile& file : specs.specs) {
      if (file.spec.kind == default_kind) last = &file.spec;
    }
    if (last == nullptr) {
      return UnknownDevice(default_kind,
                           absl::StrCat(default_kind, " driver (none)"));
    }
    add_spec_edits(last);
  }
  for (const std::string& qualified : request.cdi_names) {
    auto [kind, name] = SplitQualifiedName(qualified);
    Found found = FindDevice(specs, kind, name);
    if (found.device == nullptr) return UnknownDevice(kind, qualified);
    add_spec_edits(found.spec);
    edits.push_back(found.device->edits);
  }
  return edits;
}

}  // namespace gpulet::runtime
