#include "src/runtime/engineconfig/configure.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gpulet::engineconfig {
namespace {

bool ValidName(std::string_view name) {
  if (name.empty() || !std::isalnum(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
           c == '_' || c == '.';
  });
}

bool Printable(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
}

absl::Status CheckOptions(const RuntimeOptions& o) {
  if (!ValidName(o.name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--runtime-name \"", o.name,
        "\": a runtime name is letters, digits, '-', '_' and '.', starting "
        "with a letter or digit"));
  }
  if (o.path.empty() || o.path[0] != '/' || !Printable(o.path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--runtime-path \"", o.path, "\": must be an absolute path"));
  }
  if (o.cdi_annotation_prefix.empty() || !Printable(o.cdi_annotation_prefix)) {
    return absl::InvalidArgumentError(
        "--cdi-annotation-prefix: must not be empty");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Engine> ParseEngine(std::string_view name) {
  if (name == "containerd") return Engine::kContainerd;
  if (name == "crio") return Engine::kCrio;
  if (name == "docker") return Engine::kDocker;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown runtime \"", std::string(name),
                   "\": one of containerd, crio, docker"));
}

std::string_view EngineName(Engine engine) {
  switch (engine) {
    case Engine::kContainerd:
      return "containerd";
    case Engine::kCrio:
      return "crio";
    case Engine::kDocker:
      return "docker";
  }
  return "";
}

std::string DefaultConfigPath(Engine engine) {
  switch (engine) {
    case Engine::kContainerd:
      return "/etc/containerd/config.toml";
    case Engine::kCrio:
      return "/etc/crio/crio.conf.d/99-gpulet.conf";
    case Engine::kDocker:
      return "/etc/docker/daemon.json";
  }
  return "";
}

absl::StatusOr<std::string> ConfigureEngine(Engine engine, std::string text,
                                            const std::string& file_name,
                                            const RuntimeOptions& options) {
  absl::Status valid = CheckOptions(options);
  if (!valid.ok()) return valid;
  // The TOML and JSON libraries throw; nothing of theirs leaves this layer.
  try {
    switch (engine) {
      case Engine::kContainerd:
        return ConfigureContainerd(std::move(text), file_name, options);
      case Engine::kCrio:
        return ConfigureCrio(std::move(text), file_name, options);
      case Engine::kDocker:
        return ConfigureDocker(std::move(text), file_name, options);
    }
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat(file_name, ": unexpected error: ", e.what()));
  }
  return absl::InvalidArgumentError("unknown engine");
}

}  // namespace gpulet::engineconfig
