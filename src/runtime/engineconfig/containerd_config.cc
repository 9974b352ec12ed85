// containerd: gpulet-runtime becomes the runc binary (BinaryName) of a
// runtime of the CRI plugin, set up like the runc runtime already there, so
// it keeps the node's cgroup driver and other runc options.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/status_macros.h"
#include "src/runtime/engineconfig/configure.h"
#include "src/runtime/engineconfig/toml_document.h"

namespace gpulet::engineconfig {
namespace {

constexpr char kRuncShim[] = "io.containerd.runc.v2";

// Where a config version keeps the CRI plugin's runtime settings.
struct Layout {
  KeyPath plugin;      // enable_cdi, cdi_spec_dirs
  KeyPath containerd;  // default_runtime_name
  KeyPath runtimes;
};

absl::StatusOr<Layout> LayoutOf(TomlDocument& doc) {
  if (doc.KindAt({"version"}) == TomlKind::kMissing) {
    if (!doc.Empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          doc.name(),
          ": no `version` key: containerd reads this as a version 1 config, "
          "which gpulet does not edit; make it `version = 2` (containerd "
          "1.x) or `version = 3` (containerd 2.x) first"));
    }
    GPULET_RETURN_IF_ERROR(doc.Set({"version"}, "2").status());
  }
  std::optional<std::int64_t> version = doc.IntegerAt({"version"});
  if (!version || (*version != 2 && *version != 3)) {
    return absl::InvalidArgumentError(absl::StrCat(
        doc.name(), ":", doc.LineOf({"version"}),
        ": version = ", doc.SourceText({"version"}),
        ": gpulet edits containerd configs of version 2 (containerd 1.6, "
        "1.7) and 3 (containerd 2.x)"));
  }
  Layout layout;
  layout.plugin = {"plugins", *version == 2 ? "io.containerd.grpc.v1.cri"
                                            : "io.containerd.cri.v1.runtime"};
  layout.containerd = Join(layout.plugin, {"containerd"});
  layout.runtimes = Join(layout.containerd, {"runtimes"});
  return layout;
}

// The runc runtime to copy: the default runtime when it runs the runc
// shim, else "runc".
std::optional<KeyPath> Template(const TomlDocument& doc, const Layout& l,
                                const std::string& name) {
  auto runc_like = [&](const std::string& runtime) {
    KeyPath path = Join(l.runtimes, {runtime});
    return runtime != name && doc.KindAt(path) == TomlKind::kTable &&
           doc.StringAt(Join(path, {"runtime_type"})) == kRuncShim;
  };
  std::optional<std::string> def =
      doc.StringAt(Join(l.containerd, {"default_runtime_name"}));
  if (def && runc_like(*def)) return Join(l.runtimes, {*def});
  if (runc_like("runc")) return Join(l.runtimes, {"runc"});
  return std::nullopt;
}

// `path` (an array of strings, or missing) with `items` added.
absl::Status AddStrings(TomlDocument& doc, const KeyPath& path,
                        const std::vector<std::string>& items) {
  std::vector<std::string> list;
  if (doc.KindAt(path) != TomlKind::kMissing) {
    std::optional<std::vector<std::string>> have = doc.StringArrayAt(path);
    if (!have) {
      return absl::InvalidArgumentError(
          absl::StrCat(doc.name(), ":", doc.LineOf(path), ": ",
                       FormatKeyPath(path), " must be an array of strings"));
    }
    list = *have;
  }
  bool added = false;
  for (const std::string& item : items) {
    if (std::find(list.begin(), list.end(), item) == list.end()) {
      list.push_back(item);
      added = true;
    }
  }
  if (!added && doc.KindAt(path) != TomlKind::kMissing) return absl::OkStatus();
  return doc.Set(path, doc.StringArray(list)).status();
}

// Copies the template's values (in its order) into the new runtime `to`,
// with `overrides` replacing values of the same key.
absl::Status CopyValues(
    TomlDocument& doc, const KeyPath& from, const KeyPath& to,
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const std::string& key : doc.ValueKeys(from)) {
    std::string value = doc.SourceText(Join(from, {key}));
    for (const auto& [k, v] : overrides) {
      if (k == key) value = v;
    }
    entries.emplace_back(key, std::move(value));
  }
  return doc.SetTable(to, entries).status();
}

}  // namespace

absl::StatusOr<std::string> ConfigureContainerd(std::string text,
                                                const std::string& file_name,
                                                const RuntimeOptions& o) {
  GPULET_ASSIGN_OR_RETURN(TomlDocument doc,
                          TomlDocument::Parse(std::move(text), file_name));
  GPULET_ASSIGN_OR_RETURN(Layout l, LayoutOf(doc));
  const KeyPath runtime = Join(l.runtimes, {o.name});
  const KeyPath options = Join(runtime, {"options"});
  const std::string annotation = o.cdi_annotation_prefix + "*";

  // The template is chosen before the default runtime changes.
  const std::optional<KeyPath> from = doc.KindAt(runtime) == TomlKind::kMissing
                                          ? Template(doc, l, o.name)
                                          : std::nullopt;
  if (o.set_as_default) {
    GPULET_RETURN_IF_ERROR(
        doc.Set(Join(l.containerd, {"default_runtime_name"}), doc.Quote(o.name))
            .status());
  }
  if (from) {
    std::vector<std::string> annotations =
        doc.StringArrayAt(Join(*from, {"container_annotations"}))
            .value_or(std::vector<std::string>{});
    if (std::find(annotations.begin(), annotations.end(), annotation) ==
        annotations.end()) {
      annotations.push_back(annotation);
    }
    GPULET_RETURN_IF_ERROR(
        CopyValues(doc, *from, runtime,
                   {{"container_annotations", doc.StringArray(annotations)}}));
    GPULET_RETURN_IF_ERROR(CopyValues(doc, Join(*from, {"options"}), options,
                                      {{"BinaryName", doc.Quote(o.path)}}));
  }
  GPULET_RETURN_IF_ERROR(
      doc.Set(Join(runtime, {"runtime_type"}), doc.Quote(kRuncShim)).status());
  GPULET_RETURN_IF_ERROR(
      AddStrings(doc, Join(runtime, {"container_annotations"}), {annotation}));
  GPULET_RETURN_IF_ERROR(
      doc.Set(Join(options, {"BinaryName"}), doc.Quote(o.path)).status());
  if (o.enable_cdi) {
    GPULET_RETURN_IF_ERROR(
        doc.Set(Join(l.plugin, {"enable_cdi"}), "true").status());
    GPULET_RETURN_IF_ERROR(
        AddStrings(doc, Join(l.plugin, {"cdi_spec_dirs"}), o.cdi_spec_dirs));
  }
  return doc.text();
}

}  // namespace gpulet::engineconfig
