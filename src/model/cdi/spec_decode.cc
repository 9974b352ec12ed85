// ParseSpec: strict decoding of a CDI spec from its JSON value (YAML is
// first turned into JSON by config::YamlToJson).
#include <cstdint>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/config/yaml_json.h"
#include "src/model/cdi/spec_codec.h"

namespace gpulet::cdi {
namespace {

using Json = nlohmann::ordered_json;

// Decodes one JSON value at a field path, collecting the first error.
class Decoder {
 public:
  explicit Decoder(std::string source) : source_(std::move(source)) {}

  bool ok() const { return status_.ok(); }
  absl::Status status() const { return status_; }

  void Fail(const std::string& path, absl::string_view what) {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(absl::StrCat(
          source_, ": ", path.empty() ? "(top level)" : path, ": ", what));
    }
  }

  // An object whose keys are all in `known`; `unsupported` ones are known to
  // CDI but not modelled by gpulet.
  bool Object(const Json& j, const std::string& path,
              const std::set<std::string>& known,
              const std::set<std::string>& unsupported = {}) {
    if (!j.is_object()) {
      Fail(path, absl::StrCat("want an object, got ", j.type_name()));
      return false;
    }
    for (const auto& [key, value] : j.items()) {
      if (unsupported.count(key) > 0) {
        Fail(path,
             absl::StrCat("field \"", key, "\" is not supported by gpulet"));
        return false;
      }
      if (known.count(key) == 0) {
        Fail(path, absl::StrCat("unknown field \"", key, "\" (known: ",
                                absl::StrJoin(known, ", "), ")"));
        return false;
      }
    }
    return true;
  }

  // Null and absent both leave the target untouched, as in Go.
  static const Json* Field(const Json& obj, const char* key) {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }

  void String(const Json& obj, const char* key, const std::string& path,
              std::string* out) {
    const Json* j = Field(obj, key);
    if (j == nullptr) return;
    if (!j->is_string()) {
      Fail(Join(path, key),
           absl::StrCat("want a string, got ", j->type_name()));
      return;
    }
    *out = j->get<std::string>();
  }

  void Strings(const Json& obj, const char* key, const std::string& path,
               std::vector<std::string>* out) {
    const Json* j = Field(obj, key);
    if (j == nullptr) return;
    std::string here = Join(path, key);
    if (!j->is_array()) {
      Fail(here, absl::StrCat("want a list of strings, got ", j->type_name()));
      return;
    }
    for (size_t i = 0; i < j->size(); ++i) {
      if (!(*j)[i].is_string()) {
        Fail(absl::StrCat(here, "[", i, "]"), "want a string");
        return;
      }
      out->push_back((*j)[i].get<std::string>());
    }
  }

  void StringMap(const Json& obj, const char* key, const std::string& path,
                 std::map<std::string, std::string>* out) {
    const Json* j = Field(obj, key);
    if (j == nullptr) return;
    std::string here = Join(path, key);
    if (!j->is_object()) {
      Fail(here, absl::StrCat("want a map of strings, got ", j->type_name()));
      return;
    }
    for (const auto& [k, v] : j->items()) {
      if (!v.is_string()) {
        Fail(Join(here, k), "want a string");
        return;
      }
      (*out)[k] = v.get<std::string>();
    }
  }

  // An integer that fits T.
  template <typename T>
  void Int(const Json& obj, const char* key, const std::string& path,
           std::optional<T>* out) {
    const Json* j = Field(obj, key);
    if (j == nullptr) return;
    std::string here = Join(path, key);
    if (!j->is_number_integer()) {
      Fail(here, absl::StrCat("want an integer, got ", j->type_name()));
      return;
    }
    bool fits = j->is_number_unsigned() ? std::in_range<T>(j->get<uint64_t>())
                                        : std::in_range<T>(j->get<int64_t>());
    if (!fits) {
      Fail(here, absl::StrCat("integer ", j->dump(), " out of range"));
      return;
    }
    *out = j->is_number_unsigned() ? static_cast<T>(j->get<uint64_t>())
                                   : static_cast<T>(j->get<int64_t>());
  }

  // The items of an optional list, each with its path.
  std::vector<std::pair<const Json*, std::string>> List(
      const Json& obj, const char* key, const std::string& path) {
    std::vector<std::pair<const Json*, std::string>> items;
    const Json* j = Field(obj, key);
    if (j == nullptr) return items;
    std::string here = Join(path, key);
    if (!j->is_array()) {
      Fail(here, absl::StrCat("want a list, got ", j->type_name()));
      return items;
    }
    for (size_t i = 0; i < j->size(); ++i) {
      items.emplace_back(&(*j)[i], absl::StrCat(here, "[", i, "]"));
    }
    return items;
  }

  static std::string Join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  std::string source_;
  absl::Status status_;
};

void DecodeNode(Decoder& d, const Json& j, const std::string& path,
                DeviceNode* n) {
  if (!d.Object(j, path,
                {"path", "hostPath", "type", "major", "minor", "fileMode",
                 "permissions", "uid", "gid"})) {
    return;
  }
  d.String(j, "path", path, &n->path);
  d.String(j, "hostPath", path, &n->host_path);
  d.String(j, "type", path, &n->type);
  d.Int(j, "major", path, &n->major);
  d.Int(j, "minor", path, &n->minor);
  d.Int(j, "fileMode", path, &n->file_mode);
  d.String(j, "permissions", path, &n->permissions);
  d.Int(j, "uid", path, &n->uid);
  d.Int(j, "gid", path, &n->gid);
}

void DecodeHook(Decoder& d, const Json& j, const std::string& path, Hook* h) {
  if (!d.Object(j, path, {"hookName", "path", "args", "env", "timeout"}))
    return;
  d.String(j, "hookName", path, &h->hook_name);
  d.String(j, "path", path, &h->path);
  d.Strings(j, "args", path, &h->args);
  d.Strings(j, "env", path, &h->env);
  d.Int(j, "timeout", path, &h->timeout);
}

void DecodeMount(Decoder& d, const Json& j, const std::string& path, Mount* m) {
  if (!d.Object(j, path, {"hostPath", "containerPath", "options", "type"})) {
    return;
  }
  d.String(j, "hostPath", path, &m->host_path);
  d.String(j, "containerPath", path, &m->container_path);
  d.Strings(j, "options", path, &m->options);
  d.String(j, "type", path, &m->type);
}

void DecodeEdits(Decoder& d, const Json& obj, const char* key,
                 const std::string& parent, ContainerEdits* e) {
  const Json* j = Decoder::Field(obj, key);
  if (j == nullptr) return;
  std::string path = Decoder::Join(parent, key);
  if (!d.Object(*j, path,
                {"env", "deviceNodes", "hooks", "mounts", "additionalGids"},
                {"intelRdt", "netDevices"})) {
    return;
  }
  d.Strings(*j, "env", path, &e->env);
  for (const auto& [item, where] : d.List(*j, "deviceNodes", path)) {
    DecodeNode(d, *item, where, &e->device_nodes.emplace_back());
  }
  for (const auto& [item, where] : d.List(*j, "hooks", path)) {
    DecodeHook(d, *item, where, &e->hooks.emplace_back());
  }
  for (const auto& [item, where] : d.List(*j, "mounts", path)) {
    DecodeMount(d, *item, where, &e->mounts.emplace_back());
  }
  for (const auto& [item, where] : d.List(*j, "additionalGids", path)) {
    std::optional<uint32_t> gid;
    d.Int(Json{{"gid", *item}}, "gid", where, &gid);
    if (gid) e->additional_gids.push_back(*gid);
  }
}

Spec DecodeSpec(Decoder& d, const Json& j) {
  Spec spec;
  if (!d.Object(
          j, "",
          {"cdiVersion", "kind", "annotations", "devices", "containerEdits"})) {
    return spec;
  }
  d.String(j, "cdiVersion", "", &spec.cdi_version);
  d.String(j, "kind", "", &spec.kind);
  d.StringMap(j, "annotations", "", &spec.annotations);
  for (const auto& [item, where] : d.List(j, "devices", "")) {
    Device& device = spec.devices.emplace_back();
    if (!d.Object(*item, where, {"name", "annotations", "containerEdits"})) {
      break;
    }
    d.String(*item, "name", where, &device.name);
    d.StringMap(*item, "annotations", where, &device.annotations);
    DecodeEdits(d, *item, "containerEdits", where, &device.edits);
  }
  DecodeEdits(d, j, "containerEdits", "", &spec.edits);
  return spec;
}

// JSON with duplicate keys rejected, as the reference's yaml.v3 decoder
// rejects them; nlohmann would silently keep the last one.
absl::StatusOr<Json> ParseJson(absl::string_view text,
                               const std::string& source) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto callback = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!open_objects.empty() &&
            !open_objects.back().insert(parsed.get<std::string>()).second &&
            duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  try {
    Json value = Json::parse(text.begin(), text.end(), callback);
    if (!duplicate.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": duplicate key \"", duplicate, "\""));
    }
    return value;
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": invalid JSON: ", e.what()));
  }
}

}  // namespace

absl::StatusOr<Spec> ParseSpec(absl::string_view text,
                               const std::string& source) {
  size_t first = text.find_first_not_of(" \t\r\n");
  Json value;
  if (first != absl::string_view::npos && text[first] == '{') {
    absl::StatusOr<Json> json = ParseJson(text, source);
    if (!json.ok()) return json.status();
    value = *std::move(json);
  } else {
    absl::StatusOr<Json> yaml = config::YamlToJson(text, source);
    if (!yaml.ok()) return yaml.status();
    value = *std::move(yaml);
  }
  if (value.is_null()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": empty spec"));
  }
  Decoder decoder(source);
  Spec spec = DecodeSpec(decoder, value);
  if (!decoder.ok()) return decoder.status();
  return spec;
}

}  // namespace gpulet::cdi
