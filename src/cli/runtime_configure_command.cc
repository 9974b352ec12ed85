#include "src/cli/runtime_configure_command.h"

#include <sys/stat.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/file_util.h"
#include "src/base/common/status_macros.h"
#include "src/runtime/engineconfig/configure.h"
#include "src/runtime/engineconfig/unified_diff.h"

namespace gpulet::cli {
namespace {

// The file's permission bits, or 0644 for a file still to be made.
unsigned ModeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0644;
  return st.st_mode & 07777;
}

absl::Status MakeParentDir(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) return absl::OkStatus();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("create ", dir.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

CLI::App* AddRuntimeCommand(CLI::App& app, RuntimeConfigureOptions& options) {
  CLI::App* runtime = app.add_subcommand(
      "runtime", "Container engine set-up for gpulet-runtime");
  runtime->require_subcommand(1);
  CLI::App* configure = runtime->add_subcommand(
      "configure",
      "Add gpulet-runtime as a runtime to containerd's, CRI-O's or Docker's "
      "configuration");
  configure->add_option("--runtime", options.runtime, "The container engine")
      ->required()
      ->check(CLI::IsMember({"containerd", "crio", "docker"}));
  configure->add_option(
      "--config", options.config,
      "The engine's configuration file (default: /etc/containerd/config.toml, "
      "/etc/crio/crio.conf.d/99-gpulet.conf, /etc/docker/daemon.json)");
  configure
      ->add_option("--runtime-name", options.runtime_name,
                   "Name of the runtime to add")
      ->capture_default_str();
  configure
      ->add_option("--runtime-path", options.runtime_path,
                   "gpulet-runtime's absolute path")
      ->capture_default_str();
  configure->add_flag("--set-as-default", options.set_as_default,
                      "Make it the engine's default runtime");
  configure->add_flag("--cdi.enabled,--enable-cdi", options.enable_cdi,
                      "Let the engine apply CDI devices itself too "
                      "(containerd: enable_cdi, cdi_spec_dirs; Docker: the "
                      "cdi feature; CRI-O always does)");
  configure
      ->add_option("--cdi-annotation-prefix", options.cdi_annotation_prefix,
                   "containerd passes annotations with this prefix to the "
                   "runtime (the plugin's --cdi-annotation-prefix)")
      ->capture_default_str();
  configure->add_flag("--dry-run", options.dry_run,
                      "Print the change as a unified diff; write nothing");
  return runtime;
}

std::string BackupPath(const std::string& config) {
  std::filesystem::path file(config);
  std::filesystem::path dir = file.parent_path();
  if (absl::EndsWith(dir.filename().string(), ".d")) {
    return (dir.parent_path() / file.filename()).string() + ".bak";
  }
  return config + ".bak";
}

absl::Status RunRuntimeConfigure(const RuntimeConfigureOptions& options,
                                 std::ostream& out) {
  GPULET_ASSIGN_OR_RETURN(engineconfig::Engine engine,
                          engineconfig::ParseEngine(options.runtime));
  const std::string path = options.config.empty()
                               ? engineconfig::DefaultConfigPath(engine)
                               : options.config;
  std::string before;
  bool exists = true;
  absl::StatusOr<std::string> read = common::ReadFile(path);
  if (read.ok()) {
    before = *std::move(read);
  } else if (absl::IsNotFound(read.status())) {
    exists = false;
  } else {
    return read.status();
  }

  engineconfig::RuntimeOptions runtime;
  runtime.name = options.runtime_name;
  runtime.path = options.runtime_path;
  runtime.set_as_default = options.set_as_default;
  runtime.enable_cdi = options.enable_cdi;
  runtime.cdi_annotation_prefix = options.cdi_annotation_prefix;
  GPULET_ASSIGN_OR_RETURN(
      std::string after,
      engineconfig::ConfigureEngine(engine, before, path, runtime));

  if (options.dry_run) {
    out << engineconfig::UnifiedDiff(before, after, path);
    return absl::OkStatus();
  }
  if (exists && after == before) {
    out << path << ": runtime " << runtime.name
        << " already configured; not changed\n";
    return absl::OkStatus();
  }
  const unsigned mode = ModeOf(path);
  std::string saved;
  if (exists) {
    saved = BackupPath(path);
    GPULET_RETURN_IF_ERROR(
        common::WriteFileAtomic(saved, before, common::WriteOptions{mode}));
  } else {
    GPULET_RETURN_IF_ERROR(MakeParentDir(path));
  }
  GPULET_RETURN_IF_ERROR(
      common::WriteFileAtomic(path, after, common::WriteOptions{mode}));
  out << path << ": added runtime " << runtime.name;
  if (!saved.empty()) out << " (previous file saved as " << saved << ")";
  out << "; restart " << engineconfig::EngineName(engine) << " to use it\n";
  return absl::OkStatus();
}

}  // namespace gpulet::cli
