#include "src/model/labels/labels.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/model/labels/resource_labels.h"

namespace gpulet::labels {
namespace {

constexpr size_t kMaxLabelValue = 63;

// "550.54.15": the driver labels, old and new spellings. A version NVIDIA
// would not print (not two or three parts) gives none.
void AddDriverLabels(const std::string& version, Labels& out) {
  std::vector<std::string> parts = absl::StrSplit(version, '.');
  if (parts.size() < 2 || parts.size() > 3) return;
  const std::string rev = parts.size() == 3 ? parts[2] : "";
  out["nvidia.com/cuda.driver.major"] = parts[0];
  out["nvidia.com/cuda.driver.minor"] = parts[1];
  out["nvidia.com/cuda.driver.rev"] = rev;
  out["nvidia.com/cuda.driver-version.major"] = parts[0];
  out["nvidia.com/cuda.driver-version.minor"] = parts[1];
  out["nvidia.com/cuda.driver-version.revision"] = rev;
  out["nvidia.com/cuda.driver-version.full"] = version;
}

// 12040: CUDA 12.4, the highest version the driver supports (NVIDIA calls
// it the runtime version in these labels).
void AddCudaLabels(int cuda, Labels& out) {
  if (cuda <= 0) return;
  const std::string major = absl::StrCat(cuda / 1000);
  const std::string minor = absl::StrCat((cuda % 1000) / 10);
  out["nvidia.com/cuda.runtime.major"] = major;
  out["nvidia.com/cuda.runtime.minor"] = minor;
  out["nvidia.com/cuda.runtime-version.major"] = major;
  out["nvidia.com/cuda.runtime-version.minor"] = minor;
  out["nvidia.com/cuda.runtime-version.full"] = absl::StrCat(major, ".", minor);
}

// compute for a 3D controller, graphics for a VGA controller; unknown when
// a class is missing, another class, or the GPUs disagree.
std::string GpuMode(const device::Node& node, const NodeFacts& facts) {
  std::set<std::string> classes;
  for (const device::Gpu& gpu : node.gpus) {
    auto it = facts.pci_class.find(gpu.index);
    classes.insert(it == facts.pci_class.end() ? "" : it->second);
  }
  if (classes.size() != 1) return "unknown";
  const std::string& c = *classes.begin();
  if (c == "0x030200") return "compute";
  if (c == "0x030000") return "graphics";
  return "unknown";
}

// MPS shares whole GPUs only: a MIG-enabled GPU makes the node incapable.
std::string MpsCapable(const device::Node& node, const config::Config& config) {
  if (config.sharing.Strategy() != config::SharingStrategy::kMps) {
    return "false";
  }
  for (const device::Gpu& gpu : node.gpus) {
    if (gpu.mig_enabled) return "false";
  }
  return "true";
}

// "<cluster UUID>.<clique ID>" when every GPU that joined an NVLink fabric
// names the same cluster and clique; nothing otherwise.
void AddCliqueLabel(const device::Node& node, Labels& out) {
  std::set<std::string> clusters;
  std::set<uint32_t> cliques;
  for (const device::Gpu& gpu : node.gpus) {
    if (!gpu.fabric.has_value() || !gpu.fabric->Joined() ||
        gpu.fabric->cluster_uuid.empty()) {
      continue;
    }
    clusters.insert(gpu.fabric->cluster_uuid);
    cliques.insert(gpu.fabric->clique_id);
  }
  if (clusters.size() != 1 || cliques.size() != 1) return;
  out["nvidia.com/gpu.clique"] =
      absl::StrCat(*clusters.begin(), ".", *cliques.begin());
}

}  // namespace

std::string ArchFamily(int cc_major, int cc_minor) {
  switch (cc_major) {
    case 1:
      return "tesla";
    case 2:
      return "fermi";
    case 3:
      return "kepler";
    case 5:
      return "maxwell";
    case 6:
      return "pascal";
    case 7:
      return cc_minor < 5 ? "volta" : "turing";
    case 8:
      return cc_minor < 9 ? "ampere" : "ada-lovelace";
    case 9:
      return "hopper";
    case 10:
    case 12:
      return "blackwell";
    case 13:
      return "rubin";
    default:
      return "undefined";
  }
}

std::string LabelValue(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' ||
        c == '_' || c == '.') {
      out.push_back(c);
    } else if (c == '+') {
      out.push_back('.');
    } else {
      out.push_back('-');
    }
  }
  if (out.size() > kMaxLabelValue) out.resize(kMaxLabelValue);
  auto alnum = [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c));
  };
  while (!out.empty() && !alnum(out.back())) out.pop_back();
  size_t start = 0;
  while (start < out.size() && !alnum(out[start])) ++start;
  return out.substr(start);
}

Labels ComputeLabels(const device::Node& node, const config::Config& config,
                     const NodeFacts& facts) {
  Labels out;
  std::string machine = LabelValue(facts.machine_type);
  out["nvidia.com/gpu.machine"] =
      machine.empty() ? std::string(kMachineTypeUnknown) : machine;
  if (facts.timestamp.has_value()) {
    out["nvidia.com/gfd.timestamp"] = absl::StrCat(*facts.timestamp);
  }
  if (node.gpus.empty()) return out;
  AddDriverLabels(node.driver_version, out);
  AddCudaLabels(node.cuda_driver_version, out);
  out["nvidia.com/mig.capable"] = "false";
  for (const device::Gpu& gpu : node.gpus) {
    if (gpu.mig_capable) out["nvidia.com/mig.capable"] = "true";
  }
  out["nvidia.com/mps.capable"] = MpsCapable(node, config);
  out["nvidia.com/gpu.mode"] = GpuMode(node, facts);
  AddCliqueLabel(node, out);
  internal::AddResourceLabels(node, config, out);
  // Product names come from NVML; keep every value one the API server
  // accepts.
  for (auto& [key, value] : out) value = LabelValue(value);
  return out;
}

}  // namespace gpulet::labels
