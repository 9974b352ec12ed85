// CRI-O: a runtime handler in a drop-in of /etc/crio/crio.conf.d. CRI-O
// applies CDI devices itself (always on, spec dirs /etc/cdi and
// /var/run/cdi by default), so there is nothing to enable for CDI.
#include <utility>

#include "src/base/common/status_macros.h"
#include "src/runtime/engineconfig/configure.h"
#include "src/runtime/engineconfig/toml_document.h"

namespace gpulet::engineconfig {

absl::StatusOr<std::string> ConfigureCrio(std::string text,
                                          const std::string& file_name,
                                          const RuntimeOptions& o) {
  GPULET_ASSIGN_OR_RETURN(TomlDocument doc,
                          TomlDocument::Parse(std::move(text), file_name));
  if (o.set_as_default) {
    GPULET_RETURN_IF_ERROR(
        doc.Set({"crio", "runtime", "default_runtime"}, doc.Quote(o.name))
            .status());
  }
  const KeyPath runtime = {"crio", "runtime", "runtimes", o.name};
  GPULET_RETURN_IF_ERROR(
      doc.Set(Join(runtime, {"runtime_path"}), doc.Quote(o.path)).status());
  GPULET_RETURN_IF_ERROR(
      doc.Set(Join(runtime, {"runtime_type"}), doc.Quote("oci")).status());
  return doc.text();
}

}  // namespace gpulet::engineconfig
