#include "src/model/cdi/spec_codec.h"

#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "src/base/config/yaml_json.h"

namespace gpulet::cdi {
namespace {

using Json = nlohmann::ordered_json;

Json StringList(const std::vector<std::string>& list) { return Json(list); }

Json EncodeNode(const DeviceNode& n) {
  Json j = {{"path", n.path}};
  if (!n.host_path.empty()) j["hostPath"] = n.host_path;
  if (!n.type.empty()) j["type"] = n.type;
  // Written whenever set, even 0 (/dev/nvidia0): a reader then need not
  // know that the reference treats a missing minor as 0.
  if (n.major) j["major"] = *n.major;
  if (n.minor) j["minor"] = *n.minor;
  if (n.file_mode) j["fileMode"] = *n.file_mode;
  if (!n.permissions.empty()) j["permissions"] = n.permissions;
  if (n.uid) j["uid"] = *n.uid;
  if (n.gid) j["gid"] = *n.gid;
  return j;
}

Json EncodeEdits(const ContainerEdits& e) {
  Json j = Json::object();
  if (!e.env.empty()) j["env"] = StringList(e.env);
  if (!e.device_nodes.empty()) {
    Json& nodes = j["deviceNodes"] = Json::array();
    for (const DeviceNode& n : e.device_nodes) nodes.push_back(EncodeNode(n));
  }
  if (!e.hooks.empty()) {
    Json& hooks = j["hooks"] = Json::array();
    for (const Hook& h : e.hooks) {
      Json hook = {{"hookName", h.hook_name}, {"path", h.path}};
      if (!h.args.empty()) hook["args"] = StringList(h.args);
      if (!h.env.empty()) hook["env"] = StringList(h.env);
      if (h.timeout) hook["timeout"] = *h.timeout;
      hooks.push_back(std::move(hook));
    }
  }
  if (!e.mounts.empty()) {
    Json& mounts = j["mounts"] = Json::array();
    for (const Mount& m : e.mounts) {
      Json mount = {{"hostPath", m.host_path},
                    {"containerPath", m.container_path}};
      if (!m.options.empty()) mount["options"] = StringList(m.options);
      if (!m.type.empty()) mount["type"] = m.type;
      mounts.push_back(std::move(mount));
    }
  }
  if (!e.additional_gids.empty()) j["additionalGids"] = e.additional_gids;
  return j;
}

}  // namespace

absl::StatusOr<Format> ParseFormat(const std::string& name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "yaml" || lower == "yml") return Format::kYaml;
  if (lower == "json") return Format::kJson;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown CDI spec format \"", name, "\" (want yaml or json)"));
}

const char* FormatExtension(Format format) {
  return format == Format::kJson ? ".json" : ".yaml";
}

nlohmann::ordered_json SpecToJsonValue(const Spec& spec) {
  Json j = {{"cdiVersion", spec.cdi_version}, {"kind", spec.kind}};
  if (!spec.annotations.empty()) j["annotations"] = spec.annotations;
  Json& devices = j["devices"] = Json::array();
  for (const Device& d : spec.devices) {
    Json device = {{"name", d.name}};
    if (!d.annotations.empty()) device["annotations"] = d.annotations;
    device["containerEdits"] = EncodeEdits(d.edits);
    devices.push_back(std::move(device));
  }
  if (!spec.edits.empty()) j["containerEdits"] = EncodeEdits(spec.edits);
  return j;
}

std::string SpecToJson(const Spec& spec) {
  return SpecToJsonValue(spec).dump(2) + "\n";
}

std::string SpecToYaml(const Spec& spec) {
  return "---\n" + config::JsonToYaml(SpecToJsonValue(spec));
}

std::string FormatSpec(const Spec& spec, Format format) {
  return format == Format::kJson ? SpecToJson(spec) : SpecToYaml(spec);
}

}  // namespace gpulet::cdi
