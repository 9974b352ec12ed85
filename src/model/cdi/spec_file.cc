#include "src/model/cdi/spec_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"
#include "src/model/cdi/validate.h"

namespace gpulet::cdi {
namespace {

absl::Status MakeDirs(const std::string& dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    std::string prefix = dir.substr(0, slash);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0755) != 0 &&
        errno != EEXIST) {
      return common::ErrnoToStatus(errno, absl::StrCat("create ", prefix));
    }
    if (slash == std::string::npos) return absl::OkStatus();
  }
}

}  // namespace

std::string SpecFileName(const std::string& kind, Format format) {
  return absl::StrReplaceAll(kind, {{"/", "-"}}) + FormatExtension(format);
}

absl::StatusOr<std::string> WriteSpecFile(const std::string& dir,
                                          const Spec& spec, Format format) {
  absl::Status valid = Validate(spec);
  if (!valid.ok()) return valid;
  absl::Status made = MakeDirs(dir);
  if (!made.ok()) return made;
  std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  std::string path = base + SpecFileName(spec.kind, format);
  absl::Status written =
      common::WriteFileAtomic(path, FormatSpec(spec, format));
  if (!written.ok()) return written;
  Format other = format == Format::kJson ? Format::kYaml : Format::kJson;
  std::string stale = base + SpecFileName(spec.kind, other);
  if (::unlink(stale.c_str()) != 0 && errno != ENOENT) {
    return common::ErrnoToStatus(errno, absl::StrCat("remove ", stale));
  }
  return path;
}

absl::StatusOr<Spec> GenerateSpec(const device::Node& node,
                                  DriverOptions driver,
                                  const BuildOptions& build) {
  if (driver.version.empty()) driver.version = node.driver_version;
  absl::StatusOr<Driver> found = DiscoverDriver(driver);
  if (!found.ok()) return found.status();
  return BuildSpec(node, *found, build);
}

absl::StatusOr<Spec> ReadSpecFile(const std::string& path) {
  absl::StatusOr<std::string> text = common::ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<Spec> spec = ParseSpec(*text, path);
  if (!spec.ok()) return spec.status();
  absl::Status valid = Validate(*spec);
  if (!valid.ok()) return common::Annotate(valid, path);
  return spec;
}

}  // namespace gpulet::cdi
