#include "src/model/cdi/validate.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace gpulet::cdi {
namespace {

constexpr const char* kHookNames[] = {"prestart",        "createRuntime",
                                      "createContainer", "startContainer",
                                      "poststart",       "poststop"};

bool IsAlnum(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c));
}
bool IsLetter(char c) {
  return absl::ascii_isalpha(static_cast<unsigned char>(c));
}

// Shared shape of every name: first and last character rules and an allowed
// set in between.
absl::Status CheckName(const std::string& what, const std::string& value,
                       bool (*first)(char), const char* first_rule,
                       absl::string_view middle_extra) {
  if (value.empty()) return absl::InvalidArgumentError(what + " is empty");
  if (!first(value[0])) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", value, "\" must start with ", first_rule));
  }
  for (size_t i = 1; i + 1 < value.size(); ++i) {
    char c = value[i];
    if (!IsAlnum(c) && !absl::StrContains(middle_extra, c)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " \"", value, "\" has invalid character '",
                       std::string(1, c), "'"));
    }
  }
  if (!IsAlnum(value.back())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", value, "\" must end with a letter or digit"));
  }
  return absl::OkStatus();
}

int VersionIndex(const std::string& version) {
  absl::string_view v = version;
  absl::ConsumePrefix(&v, "v");
  int i = 0;
  for (const char* known : kKnownVersions) {
    if (v == known) return i;
    ++i;
  }
  return -1;
}

absl::Status ValidateEnv(const std::vector<std::string>& env,
                         const std::string& where) {
  for (const std::string& entry : env) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": invalid environment variable \"", entry,
                       "\" (want KEY=value)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateNode(const DeviceNode& node, const std::string& where) {
  if (node.path.empty()) {
    return absl::InvalidArgumentError(where + ": device node with empty path");
  }
  static const std::set<std::string> kTypes = {"", "b", "c", "u", "p"};
  if (kTypes.count(node.type) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": device node ", node.path, ": invalid type \"",
                     node.type, "\""));
  }
  // "none" is the reference library's spelling of "no access at all".
  if (node.permissions != "none" &&
      node.permissions.find_first_not_of("rwm") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": device node ", node.path,
                     ": invalid permissions \"", node.permissions, "\""));
  }
  return absl::OkStatus();
}

absl::Status ValidateEdits(const ContainerEdits& edits,
                           const std::string& where) {
  absl::Status env = ValidateEnv(edits.env, where);
  if (!env.ok()) return env;
  for (const DeviceNode& node : edits.device_nodes) {
    absl::Status s = ValidateNode(node, where);
    if (!s.ok()) return s;
  }
  for (const Hook& hook : edits.hooks) {
    bool known = false;
    for (const char* name : kHookNames) known = known || hook.hook_name == name;
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": invalid hook name \"", hook.hook_name, "\" (want one of ",
          absl::StrJoin(kHookNames, ", "), ")"));
    }
    if (hook.path.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": hook ", hook.hook_name, " has an empty path"));
    }
    absl::Status s = ValidateEnv(hook.env, where + " hook " + hook.hook_name);
    if (!s.ok()) return s;
  }
  for (const Mount& mount : edits.mounts) {
    if (mount.host_path.empty() || mount.container_path.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": mount \"", mount.host_path, "\" -> \"",
                       mount.container_path, "\" has an empty path"));
    }
  }
  return absl::OkStatus();
}

bool UsesMountType(const ContainerEdits& e) {
  for (const Mount& m : e.mounts) {
    if (!m.type.empty()) return true;
  }
  return false;
}

bool UsesHostPath(const ContainerEdits& e) {
  for (const DeviceNode& n : e.device_nodes) {
    if (!n.host_path.empty()) return true;
  }
  return false;
}

}  // namespace

absl::Status ValidateVendorName(const std::string& vendor) {
  return CheckName("vendor", vendor, IsLetter, "a letter", "_.-");
}

absl::Status ValidateClassName(const std::string& cls) {
  return CheckName("class", cls, IsLetter, "a letter", "_.-");
}

absl::Status ValidateDeviceName(const std::string& name) {
  return CheckName("device name", name, IsAlnum, "a letter or digit", "_.:-");
}

std::string QualifiedName(const std::string& vendor, const std::string& cls,
                          const std::string& name) {
  return absl::StrCat(vendor, "/", cls, "=", name);
}

absl::StatusOr<ParsedName> ParseQualifiedName(const std::string& qualified) {
  size_t slash = qualified.find('/');
  size_t eq = qualified.find('=');
  if (slash == std::string::npos || eq == std::string::npos || eq < slash) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CDI device \"", qualified, "\" is not of the form vendor/class=name"));
  }
  ParsedName parsed{qualified.substr(0, slash),
                    qualified.substr(slash + 1, eq - slash - 1),
                    qualified.substr(eq + 1)};
  for (absl::Status s :
       {ValidateVendorName(parsed.vendor), ValidateClassName(parsed.cls),
        ValidateDeviceName(parsed.name)}) {
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("CDI device \"", qualified, "\": ", s.message()));
    }
  }
  return parsed;
}

std::string MinimumVersion(const Spec& spec) {
  std::vector<const ContainerEdits*> edits = {&spec.edits};
  bool annotations = !spec.annotations.empty();
  bool digit_name = false;
  for (const Device& d : spec.devices) {
    edits.push_back(&d.edits);
    annotations = annotations || !d.annotations.empty();
    digit_name = digit_name || absl::ascii_isdigit(static_cast<unsigned char>(
                                   d.name.empty() ? 'x' : d.name[0]));
  }
  bool gids = false, host_path = false, mount_type = false;
  for (const ContainerEdits* e : edits) {
    gids = gids || !e->additional_gids.empty();
    host_path = host_path || UsesHostPath(*e);
    mount_type = mount_type || UsesMountType(*e);
  }
  size_t slash = spec.kind.find('/');
  bool dotted_class = slash != std::string::npos &&
                      spec.kind.find('.', slash + 1) != std::string::npos;
  if (gids) return "0.7.0";
  if (annotations || dotted_class) return "0.6.0";
  if (digit_name || host_path) return "0.5.0";
  if (mount_type) return "0.4.0";
  return "0.3.0";
}

int CompareVersions(const std::string& a, const std::string& b) {
  int ia = VersionIndex(a), ib = VersionIndex(b);
  return ia < ib ? -1 : (ia > ib ? 1 : 0);
}

absl::Status Validate(const Spec& spec) {
  if (VersionIndex(spec.cdi_version) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cdiVersion \"", spec.cdi_version, "\" is not a known CDI version"));
  }
  std::string minimum = MinimumVersion(spec);
  if (CompareVersions(spec.cdi_version, minimum) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cdiVersion ", spec.cdi_version,
        " is too old for the fields this spec uses; need at least ", minimum));
  }
  size_t slash = spec.kind.find('/');
  if (slash == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kind \"", spec.kind, "\" is not of the form vendor/class"));
  }
  for (absl::Status s : {ValidateVendorName(spec.kind.substr(0, slash)),
                         ValidateClassName(spec.kind.substr(slash + 1))}) {
    if (!s.ok())
      return absl::InvalidArgumentError(absl::StrCat("kind: ", s.message()));
  }
  absl::Status edits = ValidateEdits(spec.edits, "containerEdits");
  if (!edits.ok()) return edits;
  if (spec.devices.empty()) {
    return absl::InvalidArgumentError("spec has no devices");
  }
  std::set<std::string> seen;
  for (const Device& d : spec.devices) {
    absl::Status name = ValidateDeviceName(d.name);
    if (!name.ok()) return name;
    if (!seen.insert(d.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device \"", d.name, "\" is defined twice"));
    }
    if (d.edits.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device \"", d.name, "\" has empty containerEdits"));
    }
    absl::Status s =
        ValidateEdits(d.edits, absl::StrCat("device \"", d.name, "\""));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace gpulet::cdi
