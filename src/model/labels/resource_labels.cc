#include "src/model/labels/resource_labels.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/model/resources/resources.h"

namespace gpulet::labels::internal {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// The labels of one resource, "<prefix>.<suffix>". `sharing` is null where
// GFD labels without sharing (MIG-enabled GPUs counted as full GPUs).
class ResourceLabeler {
 public:
  ResourceLabeler(std::string prefix, const config::Sharing* sharing)
      : prefix_(std::move(prefix)), sharing_(sharing) {}

  void Set(Labels& out, const std::string& suffix,
           const std::string& value) const {
    out[absl::StrCat(prefix_, ".", suffix)] = value;
  }

  // product, count, replicas and sharing-strategy.
  void AddBase(Labels& out, int count,
               const std::vector<std::string>& parts) const {
    const int replicas = Replicas();
    Set(out, "product", Product(parts));
    Set(out, "count", absl::StrCat(count));
    Set(out, "replicas", absl::StrCat(replicas));
    std::string strategy = "none";
    if (sharing_ != nullptr && replicas > 1) {
      strategy = sharing_->Strategy() == config::SharingStrategy::kMps
                     ? "mps"
                     : "time-slicing";
    }
    Set(out, "sharing-strategy", strategy);
  }

  // The product: the parts sanitised as GFD does and joined with '-',
  // "-SHARED" appended when the resource is shared and not renamed.
  std::string Product(const std::vector<std::string>& parts) const {
    std::vector<std::string> kept;
    for (const std::string& part : parts) {
      std::string clean = ProductPart(part);
      if (!clean.empty()) kept.push_back(std::move(clean));
    }
    const config::ReplicatedResource* r = Replication();
    if (!kept.empty() && r != nullptr && r->replicas > 1 && r->rename.empty()) {
      kept.emplace_back("SHARED");
    }
    return absl::StrJoin(kept, "-");
  }

 private:
  // The first sharing entry for this resource, as NVIDIA matches it (by
  // the name the entry shares, whatever its device list).
  const config::ReplicatedResource* Replication() const {
    if (sharing_ == nullptr) return nullptr;
    const config::ReplicatedResources* active = sharing_->Active();
    if (active == nullptr) return nullptr;
    for (const config::ReplicatedResource& r : active->resources) {
      if (r.name == prefix_) return &r;
    }
    return nullptr;
  }

  int Replicas() const {
    if (sharing_ == nullptr) return 0;
    const config::ReplicatedResource* r = Replication();
    return r != nullptr && r->replicas > 0 ? r->replicas : 1;
  }

  // GFD's sanitising: characters other than letters, digits, '-', '_', '.'
  // and blanks dropped, runs of blanks turned into one '-'.
  static std::string ProductPart(const std::string& text) {
    std::string out;
    bool blank = false;
    for (char c : text) {
      const bool word = absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
                        c == '-' || c == '_' || c == '.';
      if (c == ' ' || c == '\t') {
        blank = !out.empty();
      } else if (word) {
        if (blank) out.push_back('-');
        blank = false;
        out.push_back(c);
      }
    }
    return out;
  }

  std::string prefix_;
  const config::Sharing* sharing_;
};

void AddArchitecture(const ResourceLabeler& rl, const device::Gpu& gpu,
                     Labels& out) {
  if (gpu.cc_major == 0) return;
  rl.Set(out, "family", ArchFamily(gpu.cc_major, gpu.cc_minor));
  rl.Set(out, "compute.major", absl::StrCat(gpu.cc_major));
  rl.Set(out, "compute.minor", absl::StrCat(gpu.cc_minor));
}

// nvidia.com/gpu.* for whole GPUs. GFD labels one product: with several
// models it overwrites in map order; gpulet takes the model of the
// lowest-indexed GPU, preferring GPUs without MIG mode (whose labels carry
// sharing, and win in GFD too). The count is every GPU of that model.
void AddGpuLabels(const device::Node& node, const config::Config& config,
                  Labels& out) {
  const device::Gpu* chosen = nullptr;
  for (const device::Gpu& gpu : node.gpus) {
    if (chosen == nullptr || (chosen->mig_enabled && !gpu.mig_enabled)) {
      chosen = &gpu;
    }
  }
  int count = 0;
  for (const device::Gpu& gpu : node.gpus) count += gpu.name == chosen->name;
  ResourceLabeler rl(kGpuPrefix,
                     chosen->mig_enabled ? nullptr : &config.sharing);
  rl.AddBase(out, count, {chosen->name});
  if (chosen->memory_total_bytes / kMiB != 0) {
    rl.Set(out, "memory", absl::StrCat(chosen->memory_total_bytes / kMiB));
  }
  AddArchitecture(rl, *chosen, out);
}

// MIG devices by profile, first seen first.
struct Profile {
  const device::Gpu* parent = nullptr;
  const device::MigDevice* mig = nullptr;
  int count = 0;
};

std::map<std::string, Profile> MigProfiles(const device::Node& node) {
  std::map<std::string, Profile> profiles;
  for (const device::Gpu& gpu : node.gpus) {
    if (!gpu.mig_enabled) continue;
    for (const device::MigDevice& mig : gpu.mig_devices) {
      Profile& p = profiles[mig.profile];
      if (p.mig == nullptr) p = Profile{&gpu, &mig, 0};
      ++p.count;
    }
  }
  return profiles;
}

void AddMigLabels(const std::string& prefix, const Profile& p,
                  const config::Config& config, Labels& out) {
  ResourceLabeler rl(prefix, &config.sharing);
  rl.AddBase(out, p.count, {p.parent->name, "MIG", p.mig->profile});
  rl.Set(out, "memory", absl::StrCat(p.mig->memory_bytes / kMiB));
  rl.Set(out, "multiprocessors", absl::StrCat(p.mig->multiprocessor_count));
  rl.Set(out, "slices.gi", absl::StrCat(p.mig->gi_slice_count));
  rl.Set(out, "slices.ci", absl::StrCat(p.mig->ci_slice_count));
  rl.Set(out, "engines.copy", absl::StrCat(p.mig->copy_engine_count));
  rl.Set(out, "engines.decoder", absl::StrCat(p.mig->decoder_count));
  rl.Set(out, "engines.encoder", absl::StrCat(p.mig->encoder_count));
  rl.Set(out, "engines.jpeg", absl::StrCat(p.mig->jpeg_count));
  rl.Set(out, "engines.ofa", absl::StrCat(p.mig->ofa_count));
}

// migStrategy single on a node it does not fit: GFD's "INVALID" labels,
// over the whole GPUs' (their sharing strategy stays).
void AddInvalidSingle(const device::Gpu& gpu, Labels& out) {
  ResourceLabeler rl(kGpuPrefix, nullptr);
  rl.Set(out, "product", rl.Product({gpu.name, "MIG", "INVALID"}));
  rl.Set(out, "count", "0");
  rl.Set(out, "replicas", "0");
  rl.Set(out, "memory", "0");
}

void AddSingleLabels(const device::Node& node, const config::Config& config,
                     Labels& out) {
  const device::Gpu* first_mig = nullptr;
  bool any_whole = false;
  bool any_empty = false;
  for (const device::Gpu& gpu : node.gpus) {
    if (!gpu.mig_enabled) {
      any_whole = true;
      continue;
    }
    if (first_mig == nullptr) first_mig = &gpu;
    any_empty |= gpu.mig_devices.empty();
  }
  if (first_mig == nullptr) return;  // as migStrategy none
  const std::map<std::string, Profile> profiles = MigProfiles(node);
  if (any_empty || any_whole || profiles.size() != 1) {
    AddInvalidSingle(*first_mig, out);
    return;
  }
  AddMigLabels(kGpuPrefix, profiles.begin()->second, config, out);
}

}  // namespace

void AddResourceLabels(const device::Node& node, const config::Config& config,
                       Labels& out) {
  AddGpuLabels(node, config, out);
  switch (config.flags.mig_strategy) {
    case config::MigStrategy::kNone:
      return;
    case config::MigStrategy::kSingle:
      out["nvidia.com/mig.strategy"] = "single";
      AddSingleLabels(node, config, out);
      return;
    case config::MigStrategy::kMixed:
      out["nvidia.com/mig.strategy"] = "mixed";
      for (const auto& [profile, p] : MigProfiles(node)) {
        AddMigLabels(resources::MixedMigResourceName(profile), p, config, out);
      }
      return;
  }
}

}  // namespace gpulet::labels::internal
