// Identifier formats shared by GPUs, MIG devices and NVSwitches: PCI bus IDs
// (normalised to NVML's 8-digit-domain form) and NVIDIA UUIDs.
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "sim/gpu_parser.h"

namespace gpulet::sim::parser {

using yaml::Ctx;
using yaml::Field;

absl::StatusOr<std::string> ParseBusId(const Ctx& ctx, const Field& field) {
  GPULET_ASSIGN_OR_RETURN(std::string text, yaml::ReadString(ctx, field, 32));
  // Fixed layout: domain (4 or 8 hex digits) ':' bus(2) ':' device(2) '.'
  // fn(1).
  const size_t domain_len = text.size() == 16 ? 8 : 4;
  uint32_t value[4] = {0, 0, 0, 0};
  const size_t lengths[4] = {domain_len, 2, 2, 1};
  const char separators[4] = {':', ':', '.', '\0'};
  bool ok = text.size() == domain_len + 8;
  size_t pos = 0;
  for (int part = 0; ok && part < 4; ++part) {
    for (size_t i = 0; ok && i < lengths[part]; ++i, ++pos) {
      unsigned char c = static_cast<unsigned char>(text[pos]);
      ok = absl::ascii_isxdigit(c);
      int digit =
          absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10;
      value[part] = value[part] * 16 + static_cast<uint32_t>(digit);
    }
    if (ok && part < 3) ok = text[pos++] == separators[part];
  }
  ok = ok && value[2] <= 0x1F && value[3] <= 7;
  if (!ok) {
    return yaml::FieldError(
        ctx, field,
        absl::StrCat("malformed PCI bus ID \"", absl::CHexEscape(text),
                     "\" (expected domain:bus:device.function such as "
                     "00000000:07:00.0, device <= 1f, function <= 7)"));
  }
  return absl::StrFormat("%08X:%02X:%02X.%X", value[0], value[1], value[2],
                         value[3]);
}

absl::StatusOr<std::string> ParseUuid(const Ctx& ctx, const Field& field,
                                      absl::string_view prefix) {
  GPULET_ASSIGN_OR_RETURN(std::string text, yaml::ReadString(ctx, field, 64));
  static constexpr size_t kGroups[] = {8, 4, 4, 4, 12};
  bool ok = absl::StartsWith(text, absl::StrCat(prefix, "-"));
  if (ok) {
    std::vector<absl::string_view> groups =
        absl::StrSplit(absl::string_view(text).substr(prefix.size() + 1), '-');
    ok = groups.size() == 5;
    for (size_t i = 0; ok && i < 5; ++i) {
      ok = groups[i].size() == kGroups[i];
      for (char c : groups[i]) {
        ok = ok && absl::ascii_isxdigit(static_cast<unsigned char>(c));
      }
    }
  }
  if (!ok) {
    return yaml::FieldError(
        ctx, field,
        absl::StrCat("malformed UUID \"", absl::CHexEscape(text),
                     "\" (expected ", prefix,
                     "-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in hex)"));
  }
  return text;
}

}  // namespace gpulet::sim::parser
