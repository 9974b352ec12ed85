// `gpulet runtime configure`'s logic: adds gpulet-runtime as a runtime to a
// container engine's configuration — containerd's config.toml (version 2
// for containerd 1.6/1.7, version 3 for 2.x), a CRI-O drop-in, Docker's
// daemon.json — keeping every other setting and comment. Text in, text
// out: reading, backing up and writing the file is the caller's.
//
// Thread safety: stateless functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpulet::engineconfig {

enum class Engine { kContainerd, kCrio, kDocker };

// "containerd", "crio" or "docker". InvalidArgument otherwise.
absl::StatusOr<Engine> ParseEngine(std::string_view name);
std::string_view EngineName(Engine engine);
// /etc/containerd/config.toml, /etc/crio/crio.conf.d/99-gpulet.conf,
// /etc/docker/daemon.json.
std::string DefaultConfigPath(Engine engine);

struct RuntimeOptions {
  std::string name = "gpulet";                   // the runtime's name
  std::string path = "/usr/bin/gpulet-runtime";  // its binary
  bool set_as_default = false;
  bool enable_cdi = false;
  // containerd: the runtime passes annotations with this prefix into the
  // container's OCI spec (container_annotations = ["<prefix>*"]).
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  std::vector<std::string> cdi_spec_dirs = {"/etc/cdi", "/var/run/cdi"};
};

// Returns `text` (the contents of `file_name`, which errors name; empty for
// a file that does not exist yet) with the runtime added. When the file
// already has everything, the result is `text` unchanged, byte for byte.
// Errors: InvalidArgument for options or a file that does not parse
// ("<file>:<line>: invalid TOML: ..."), an unsupported containerd config
// version, or a setting of the wrong type in the way (naming file, line and
// key); FailedPrecondition for a table gpulet cannot extend.
absl::StatusOr<std::string> ConfigureEngine(Engine engine, std::string text,
                                            const std::string& file_name,
                                            const RuntimeOptions& options);

// Per engine; ConfigureEngine checks the options and dispatches.
absl::StatusOr<std::string> ConfigureContainerd(std::string text,
                                                const std::string& file_name,
                                                const RuntimeOptions& options);
absl::StatusOr<std::string> ConfigureCrio(std::string text,
                                          const std::string& file_name,
                                          const RuntimeOptions& options);
absl::StatusOr<std::string> ConfigureDocker(std::string text,
                                            const std::string& file_name,
                                            const RuntimeOptions& options);

}  // namespace gpulet::engineconfig
