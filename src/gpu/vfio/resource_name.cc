#include "src/gpu/vfio/resource_name.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "src/base/common/file_util.h"
#include "src/gpu/vfio/vfio.h"

namespace gpulet::vfio {

const std::map<uint16_t, absl::string_view>& NvidiaDeviceTable() {
  // The PCI ID database's names (pci.ids as of 2025). Entries are never
  // renamed here: a rename would move a node's GPUs to another resource.
  // resource_name_test checks them against the database scripts/bootstrap
  // installs, wherever it has the ID.
  static const std::map<uint16_t, absl::string_view> table = {
      {0x1db1, "GV100GL [Tesla V100 SXM2 16GB]"},
      {0x1db4, "GV100GL [Tesla V100 PCIe 16GB]"},
      {0x1db5, "GV100GL [Tesla V100 SXM2 32GB]"},
      {0x1db6, "GV100GL [Tesla V100 PCIe 32GB]"},
      {0x1db8, "GV100GL [Tesla V100 SXM3 32GB]"},
      {0x1df6, "GV100GL [Tesla V100S PCIe 32GB]"},
      {0x1eb8, "TU104GL [Tesla T4]"},
      {0x20b0, "GA100 [A100 SXM4 40GB]"},
      {0x20b1, "GA100 [A100 PCIe 40GB]"},
      {0x20b2, "GA100 [A100 SXM4 80GB]"},
      {0x20b3, "GA100 [A100-SXM-64GB]"},
      {0x20b5, "GA100 [A100 PCIe 80GB]"},
      {0x20b7, "GA100GL [A30 PCIe]"},
      {0x20b8, "GA100 [A100X]"},
      {0x20f1, "GA100 [A100 PCIe 40GB]"},
      {0x20f3, "GA100 [A800-SXM4-80GB]"},
      {0x20f5, "GA100 [A800 80GB PCIe]"},
      {0x20f6, "GA100 [A800 40GB PCIe]"},
      {0x2230, "GA102GL [RTX A6000]"},
      {0x2235, "GA102GL [A40]"},
      {0x2236, "GA102GL [A10]"},
      {0x2237, "GA102GL [A10G]"},
      {0x25b6, "GA107GL [A2 / A16]"},
      {0x26b1, "AD102GL [L6000 / RTX 6000 Ada Generation]"},
      {0x26b5, "AD102GL [L40]"},
      {0x26b9, "AD102GL [L40S]"},
      {0x26ba, "AD102GL [L20]"},
      {0x27b8, "AD104GL [L4]"},
      {0x2313, "GH100 [H100 CNX]"},
      {0x2321, "GH100 [H100 NVL]"},
      {0x2322, "GH100 [H800 PCIe]"},
      {0x2324, "GH100 [H800]"},
      {0x2329, "GH100 [H20]"},
      {0x2330, "GH100 [H100 SXM5 80GB]"},
      {0x2331, "GH100 [H100 PCIe]"},
      {0x2335, "GH100 [H200 SXM 141GB]"},
      {0x233b, "GH100 [H200 NVL]"},
      {0x2342, "GH100 [GH200 120GB / 480GB]"},
      {0x2348, "GH100 [GH200 144G HBM3e]"},
      {0x2901, "GB100 [B200]"},
      {0x2941, "GB100 [GB200]"},
      {0x2bb5, "GB202GL [RTX PRO 6000 Blackwell Server Edition]"},
  };
  return table;
}

std::string DeriveResourceName(absl::string_view pci_ids_name) {
  std::string out;
  bool in_space = false;
  for (char c : pci_ids_name) {
    const auto u = static_cast<unsigned char>(c);
    if (absl::ascii_isspace(u)) {
      if (!in_space) out += '_';
      in_space = true;
      continue;
    }
    in_space = false;
    if (c == '/' || c == '.' || c == '-') {
      out += '_';
    } else if (absl::ascii_isalnum(u) || c == '_') {
      out += absl::ascii_toupper(u);
    }
  }
  return out;
}

std::string MdevResourceName(const std::string& type_name) {
  std::string out;
  bool in_space = false;
  for (char c : absl::StripAsciiWhitespace(type_name)) {
    const auto u = static_cast<unsigned char>(c);
    if (absl::ascii_isspace(u)) {
      if (!in_space) out += '_';
      in_space = true;
      continue;
    }
    in_space = false;
    if (absl::ascii_isalnum(u) || c == '_' || c == '.' || c == '-') out += c;
  }
  return out;
}

std::string FindInPciIds(absl::string_view text, uint16_t device_id) {
  const std::string wanted = absl::StrFormat("%04x", device_id);
  bool in_nvidia = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] != '\t') {
      if (in_nvidia) return "";  // the next vendor
      in_nvidia = absl::StartsWith(line, "10de ");
      continue;
    }
    if (!in_nvidia || (line.size() > 1 && line[1] == '\t')) continue;
    absl::string_view entry = line.substr(1);
    if (entry.size() > 4 &&
        absl::AsciiStrToLower(entry.substr(0, 4)) == wanted) {
      return std::string(absl::StripAsciiWhitespace(entry.substr(4)));
    }
  }
  return "";
}

std::string ResourceName(uint16_t device_id,
                         const std::map<uint16_t, std::string>& overrides,
                         const std::filesystem::path& pci_ids) {
  if (auto it = overrides.find(device_id); it != overrides.end()) {
    return DeriveResourceName(it->second);
  }
  const auto& table = NvidiaDeviceTable();
  if (auto it = table.find(device_id); it != table.end()) {
    return DeriveResourceName(it->second);
  }
  if (!pci_ids.empty()) {
    if (absl::StatusOr<std::string> text = common::ReadFile(pci_ids.string());
        text.ok()) {
      const std::string name =
          DeriveResourceName(FindInPciIds(*text, device_id));
      if (!name.empty()) return name;
    }
  }
  return absl::StrFormat("10DE_%04X", device_id);
}

}  // namespace gpulet::vfio
