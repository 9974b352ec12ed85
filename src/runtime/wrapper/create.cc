#include "src/runtime/wrapper/create.h"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"
#include "src/base/common/logging.h"
#include "src/runtime/wrapper/oci_config.h"
#include "src/runtime/wrapper/request.h"

namespace gpulet::runtime {
namespace {

// Spec host paths already carry the driver root; a driver root that cannot
// be read still means the node's driver is not usable, so say so before
// runc fails on a missing library with a less helpful message.
absl::Status CheckDriverRoot(const std::string& root) {
  DIR* dir = ::opendir(root.c_str());
  if (dir == nullptr) {
    return common::ErrnoToStatus(errno,
                                 absl::StrCat("driver root ", root,
                                              " (driverRoot in the runtime "
                                              "config)"));
  }
  ::closedir(dir);
  return absl::OkStatus();
}

RequestOptions RequestOptionsFrom(const config::RuntimeConfig& config) {
  RequestOptions options;
  options.vendor = config.vendor;
  options.device_class = config.device_class;
  options.accept_envvar_unprivileged = config.accept_envvar_unprivileged;
  return options;
}

}  // namespace

absl::StatusOr<PrepareResult> PrepareBundle(const std::string& bundle_dir,
                                            const PrepareOptions& options) {
  const std::string path = bundle_dir.empty()
                               ? std::string("config.json")
                               : absl::StrCat(bundle_dir, "/config.json");
  absl::StatusOr<std::string> text = common::ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<nlohmann::json> config = ParseOciConfig(*text, path);
  if (!config.ok()) return config.status();
  absl::StatusOr<GpuRequest> request =
      DetectRequest(*config, RequestOptionsFrom(options.config));
  if (!request.ok()) return common::Annotate(request.status(), path);

  PrepareResult result;
  if (request->empty()) return result;
  if (absl::Status s = CheckDriverRoot(options.config.driver_root); !s.ok()) {
    return s;
  }
  absl::StatusOr<LoadedSpecs> specs =
      LoadSpecDirs(options.config.spec_dirs, options.parser);
  if (!specs.ok()) return specs.status();
  const std::string kind =
      absl::StrCat(options.config.vendor, "/", options.config.device_class);
  absl::StatusOr<std::vector<cdi::ContainerEdits>> edits =
      ResolveEdits(*specs, *request, kind);
  if (!edits.ok()) {
    // Only the runtime's own log may say which spec files are broken.
    for (const std::string& e : specs->errors) {
      GPULET_VLOG(1) << "unusable CDI spec file " << e;
    }
    return edits.status();
  }
  for (const cdi::ContainerEdits& e : *edits) {
    if (absl::Status s = ApplyEdits(e, options.lookup, *config); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = ReplaceFile(path, SerializeOciConfig(*config));
      !s.ok()) {
    return s;
  }
  result.modified = true;
  result.injected = request->cdi_names;
  if (request->driver_only) result.injected.push_back(kind + " driver");
  return result;
}

}  // namespace gpulet::runtime
