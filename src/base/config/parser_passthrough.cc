// ParseConfig's passthrough.* section: gpulet's own, absent from NVIDIA's
// schema. The selectors and resource names are checked here, where their
// positions are known; paths and the resync period in validate.cc.
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "src/base/config/config_errors.h"
#include "src/base/config/parser_sections.h"

namespace gpulet::config::internal {
namespace {

constexpr size_t kMaxSelectors = 256;
constexpr size_t kMaxNames = 256;
constexpr char kVfioBound[] = "vfio-pci";

bool ParseHex(absl::string_view text, size_t max_digits, uint32_t* out) {
  if (text.empty() || text.size() > max_digits) return false;
  for (char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleHexAtoi(text, out);
}

// "10de:2330" or "0x2330" -> 0x2330.
bool ParseDeviceId(absl::string_view text, uint16_t* out) {
  uint32_t id = 0;
  if (absl::ConsumePrefix(&text, "0x") || absl::ConsumePrefix(&text, "0X")) {
    if (!ParseHex(text, 4, &id)) return false;
  } else {
    std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
    if (parts.size() != 2 || !absl::EqualsIgnoreCase(parts[0], "10de") ||
        !ParseHex(parts[1], 4, &id)) {
      return false;
    }
  }
  *out = static_cast<uint16_t>(id);
  return true;
}

// "[dddd:]bb:dd.f" -> "dddd:bb:dd.f" in lower case, as sysfs names it.
bool ParsePciAddress(absl::string_view text, std::string* out) {
  std::vector<absl::string_view> colon = absl::StrSplit(text, ':');
  if (colon.size() == 2) colon.insert(colon.begin(), "0000");
  if (colon.size() != 3) return false;
  std::vector<absl::string_view> dot = absl::StrSplit(colon[2], '.');
  uint32_t domain = 0, bus = 0, device = 0, function = 0;
  if (dot.size() != 2 || !ParseHex(colon[0], 4, &domain) ||
      !ParseHex(colon[1], 2, &bus) || !ParseHex(dot[0], 2, &device) ||
      !ParseHex(dot[1], 1, &function) || device > 0x1f || function > 7) {
    return false;
  }
  *out = absl::StrFormat("%04x:%02x:%02x.%x", domain, bus, device, function);
  return true;
}

absl::StatusOr<PassthroughSelector> ReadSelector(ParseContext& ctx,
                                                 const Field& f) {
  GPULET_ASSIGN_OR_RETURN(std::string text, ctx.reader.String(f, 64));
  PassthroughSelector selector;
  if (text == kVfioBound) return selector;
  if (text.find('.') != std::string::npos) {
    selector.kind = PassthroughSelector::Kind::kPciAddress;
    if (ParsePciAddress(text, &selector.pci_address)) return selector;
  } else {
    selector.kind = PassthroughSelector::Kind::kDeviceId;
    if (ParseDeviceId(text, &selector.device_id)) return selector;
  }
  return ctx.reader.Error(
      f, absl::StrCat(Quote(text),
                      " is not \"vfio-pci\", a PCI address (\"0000:3b:00.0\") "
                      "or an NVIDIA device ID (\"10de:2330\" or \"0x2330\")"));
}

absl::Status ReadSelectors(ParseContext& ctx, const Field& f,
                           std::vector<PassthroughSelector>* out) {
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          ctx.reader.List(f, kMaxSelectors));
  out->clear();
  for (const Field& item : items) {
    ctx.reader.Record(item);
    GPULET_ASSIGN_OR_RETURN(PassthroughSelector s, ReadSelector(ctx, item));
    out->push_back(std::move(s));
  }
  return absl::OkStatus();
}

// vfio::ResourceName upper-cases the override and turns separators into
// '_' ("h100 vm" -> "H100_VM"); a name must keep a letter or digit.
bool ValidName(const std::string& name) {
  bool alnum = false;
  for (char c : name) {
    alnum |= absl::ascii_isalnum(static_cast<unsigned char>(c));
  }
  return alnum;
}

// A map from device IDs to names; its keys are not known in advance, so it
// is walked here rather than through ReadMap.
absl::Status ReadResourceNames(ParseContext& ctx, const Field& f,
                               std::map<uint16_t, std::string>* out) {
  out->clear();
  if (f.node.IsNull()) return absl::OkStatus();
  if (!f.node.IsMap()) {
    return ctx.reader.Error(f, absl::StrCat("expected a map from device IDs "
                                            "to names, got ",
                                            yaml::Describe(f.node)));
  }
  if (f.node.size() > kMaxNames) {
    return ctx.reader.Error(f,
                            absl::StrCat("more than ", kMaxNames, " entries"));
  }
  for (auto it = f.node.begin(); it != f.node.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    const std::string key_text = key.IsScalar() ? key.Scalar() : "";
    Field key_field{key, JoinPath(f.path, key_text)};
    uint16_t id = 0;
    if (!key.IsScalar() || !(ParseDeviceId(key_text, &id) ||
                             ParseDeviceId("0x" + key_text, &id))) {
      return ctx.reader.Error(
          key_field, absl::StrCat(Quote(key_text),
                                  " is not an NVIDIA device ID (\"2330\", "
                                  "\"0x2330\" or \"10de:2330\")"));
    }
    Field value_field{value, key_field.path};
    ctx.reader.Record(value_field);
    GPULET_ASSIGN_OR_RETURN(std::string name,
                            ctx.reader.String(value_field, 50));
    if (!ValidName(name)) {
      return ctx.reader.Error(
          value_field,
          absl::StrCat(Quote(name),
                       " is not a resource name suffix: it needs a letter or "
                       "digit (advertised as nvidia.com/<NAME>)"));
    }
    if (!out->emplace(id, name).second) {
      return ctx.reader.Error(
          key_field, absl::StrFormat("device ID %04x is named twice", id));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParsePassthrough(ParseContext& ctx, const Field& field) {
  Passthrough& p = ctx.config->passthrough.emplace();
  return ReadMap(
      ctx, field,
      {{"devices",
        [&](const Field& f) { return ReadSelectors(ctx, f, &p.devices); }},
       {"mdevs", SetBool(ctx, &p.mdevs)},
       {"resourceNames",
        [&](const Field& f) {
          return ReadResourceNames(ctx, f, &p.resource_names);
        }},
       {"sysRoot", SetString(ctx, &p.sys_root)},
       {"devRoot", SetString(ctx, &p.dev_root)},
       {"hostDevRoot", SetString(ctx, &p.host_dev_root)},
       {"pciIds", SetString(ctx, &p.pci_ids)},
       {"ueventSocket", SetString(ctx, &p.uevent_socket)},
       {"resyncPeriod", [&](const Field& f) -> absl::Status {
          return ReadDuration(ctx, f, &p.resync_period);
        }}});
}

}  // namespace gpulet::config::internal
