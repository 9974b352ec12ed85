#include "src/model/cdi/proc_files.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpulet::cdi {

absl::StatusOr<MigMinors> MigMinors::Parse(absl::string_view text) {
  MigMinors result;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    unsigned minor = 0;
    if (fields.size() != 2 || !absl::SimpleAtoi(fields[1], &minor)) {
      return absl::InvalidArgumentError(
          absl::StrCat("mig-minors line ", line_number,
                       ": want \"<capability> <minor>\", got \"", line, "\""));
    }
    result.minors_[std::string(fields[0])] = minor;
  }
  return result;
}

std::optional<unsigned> MigMinors::Find(const std::string& capability) const {
  auto it = minors_.find(capability);
  if (it == minors_.end()) return std::nullopt;
  return it->second;
}

std::optional<unsigned> MigMinors::GpuInstance(unsigned gpu_minor,
                                               unsigned gi) const {
  return Find(absl::StrCat("gpu", gpu_minor, "/gi", gi, "/access"));
}

std::optional<unsigned> MigMinors::ComputeInstance(unsigned gpu_minor,
                                                   unsigned gi,
                                                   unsigned ci) const {
  return Find(absl::StrCat("gpu", gpu_minor, "/gi", gi, "/ci", ci, "/access"));
}

std::map<std::string, int64_t> ParseProcDevices(absl::string_view text) {
  std::map<std::string, int64_t> majors;
  bool in_char = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (absl::ConsumeSuffix(&line, ":")) {
      in_char = line == "Character devices";
      continue;
    }
    if (!in_char) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    int64_t major = 0;
    if (fields.size() == 2 && absl::SimpleAtoi(fields[0], &major)) {
      majors[std::string(fields[1])] = major;
    }
  }
  return majors;
}

}  // namespace gpulet::cdi
