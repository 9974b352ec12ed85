#include "src/gpu/device/mig_minors.h"

#include <charconv>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/file_util.h"
#include "src/gpu/device/device_nodes.h"

namespace gpulet::device {
namespace {

// Consumes a decimal number from the front of `s`.
bool TakeNumber(std::string_view& s, unsigned* out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  if (ec != std::errc() || ptr == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(ptr - s.data()));
  return true;
}

bool TakeLiteral(std::string_view& s, std::string_view literal) {
  if (s.substr(0, literal.size()) != literal) return false;
  s.remove_prefix(literal.size());
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// "<name> <minor>" with the whole line consumed; `name` is what precedes
// the separating blanks.
bool SplitEntry(std::string_view line, std::string_view* name,
                unsigned* minor) {
  const size_t blank = line.find_first_of(" \t");
  if (blank == std::string_view::npos) return false;
  *name = line.substr(0, blank);
  std::string_view rest = Trim(line.substr(blank));
  return TakeNumber(rest, minor) && rest.empty();
}

// "gpu<G>/gi<I>/access" or "gpu<G>/gi<I>/ci<C>/access".
bool ParseInstance(std::string_view name, unsigned minor, MigMinors* out) {
  unsigned gpu = 0, gi = 0, ci = 0;
  if (!TakeLiteral(name, "gpu") || !TakeNumber(name, &gpu) ||
      !TakeLiteral(name, "/gi") || !TakeNumber(name, &gi)) {
    return false;
  }
  if (name == "/access") {
    out->gpu_instances[{gpu, gi}] = minor;
    return true;
  }
  if (TakeLiteral(name, "/ci") && TakeNumber(name, &ci) && name == "/access") {
    out->compute_instances[{gpu, gi, ci}] = minor;
    return true;
  }
  return false;
}

bool ParseLine(std::string_view line, MigMinors* out) {
  std::string_view name;
  unsigned minor = 0;
  if (!SplitEntry(line, &name, &minor)) return false;
  if (name == "config") {
    out->config = minor;
    return true;
  }
  if (name == "monitor") {
    out->monitor = minor;
    return true;
  }
  return ParseInstance(name, minor, out);
}

}  // namespace

MigMinors ParseMigMinors(std::string_view text) {
  MigMinors minors;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = Trim(text.substr(0, eol));
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (line.empty()) continue;
    if (!ParseLine(line, &minors)) minors.skipped_lines.emplace_back(line);
  }
  return minors;
}

absl::StatusOr<MigMinors> LoadMigMinors(const std::string& root) {
  absl::StatusOr<std::string> text =
      common::ReadFile(JoinRoot(root, kMigMinorsPath));
  if (!text.ok()) return text.status();
  return ParseMigMinors(*text);
}

std::string NvidiaCapNode(unsigned minor) {
  return absl::StrCat(kNvidiaCapsDir, "/nvidia-cap", minor);
}

absl::StatusOr<std::vector<std::string>> MigCapNodes(
    const MigMinors& minors, unsigned gpu_minor, unsigned gpu_instance_id,
    unsigned compute_instance_id) {
  auto gi = minors.gpu_instances.find({gpu_minor, gpu_instance_id});
  if (gi == minors.gpu_instances.end()) {
    return absl::NotFoundError(
        absl::StrCat(kMigMinorsPath, " has no gpu", gpu_minor, "/gi",
                     gpu_instance_id, "/access (MIG GPU instance capability)"));
  }
  auto ci = minors.compute_instances.find(
      {gpu_minor, gpu_instance_id, compute_instance_id});
  if (ci == minors.compute_instances.end()) {
    return absl::NotFoundError(absl::StrCat(
        kMigMinorsPath, " has no gpu", gpu_minor, "/gi", gpu_instance_id, "/ci",
        compute_instance_id, "/access (MIG compute instance capability)"));
  }
  return std::vector<std::string>{NvidiaCapNode(gi->second),
                                  NvidiaCapNode(ci->second)};
}

absl::StatusOr<std::vector<std::string>> MigDeviceNodes(const MigMinors& minors,
                                                        const Gpu& parent,
                                                        const MigDevice& mig) {
  absl::StatusOr<std::vector<std::string>> caps = MigCapNodes(
      minors, parent.minor, mig.gpu_instance_id, mig.compute_instance_id);
  if (!caps.ok()) {
    return absl::Status(
        caps.status().code(),
        absl::StrCat("MIG device ", mig.uuid, ": ", caps.status().message()));
  }
  std::vector<std::string> nodes = {GpuDeviceNode(parent.minor)};
  for (std::string& node : *caps) nodes.push_back(std::move(node));
  return nodes;
}

}  // namespace gpulet::device
