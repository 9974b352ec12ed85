#include "src/dra/kubelet/claim_preparer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/clock.h"
#include "src/base/common/file_util.h"
#include "src/base/common/logging.h"
#include "src/base/common/status_macros.h"
#include "src/dra/kubelet/claim_cdi.h"
#include "src/dra/kubelet/claim_config.h"
#include "src/dra/kubelet/device_names.h"
#include "src/gpu/mps/mps_paths.h"
#include "src/model/cdi/spec_codec.h"
#include "src/model/cdi/validate.h"

namespace gpulet::dra {
namespace {

absl::Status RemoveFile(const std::string& path) {
  if (unlink(path.c_str()) == 0 || errno == ENOENT) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("remove ", path, ": ", std::strerror(errno)));
}

// Claim specs left by a crash between writing a spec and checkpointing it.
void RemoveOrphanSpecs(const std::string& dir, const PreparedClaims& claims) {
  const std::string prefix =
      absl::StrCat(kClaimCdiVendor, "-", kClaimCdiClass, "_");
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string file = entry.path().filename().string();
    if (!absl::StartsWith(file, prefix) || !absl::EndsWith(file, ".json")) {
      continue;
    }
    std::string uid =
        file.substr(prefix.size(), file.size() - prefix.size() - 5);
    if (claims.contains(uid)) continue;
    absl::Status removed = RemoveFile(entry.path().string());
    GPULET_LOG(INFO) << "removed orphan claim CDI spec " << entry.path()
                     << (removed.ok() ? "" : ": ") << removed.message();
  }
}

bool SameClaim(const ClaimRef& a, const ClaimRef& b) {
  return a.namespace_name == b.namespace_name && a.name == b.name;
}

}  // namespace

absl::Status CheckClaimUid(const ClaimRef& ref) {
  bool ok = !ref.uid.empty() && ref.uid.size() <= 64;
  for (char c : ref.uid) ok = ok && (absl::ascii_isalnum(c) || c == '-');
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("claim ", ClaimName(ref), ": uid \"", ref.uid,
                   "\" is not 1-64 letters, digits and '-'"));
}

absl::StatusOr<std::unique_ptr<ClaimPreparer>> ClaimPreparer::Create(
    PreparerOptions options, ClaimGetter get_claim) {
  GPULET_ASSIGN_OR_RETURN(PreparedClaims prepared,
                          LoadCheckpoint(options.checkpoint_path));
  std::error_code ec;
  std::filesystem::create_directories(options.cdi_dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("create ", options.cdi_dir, ": ", ec.message()));
  }
  RemoveOrphanSpecs(options.cdi_dir, prepared);
  std::map<std::string, SharingEdits> reapplied;
  for (const auto& [uid, claim] : prepared) {
    if (claim.sharing.strategy.empty() || options.sharing == nullptr) continue;
    absl::StatusOr<SharingEdits> applied =
        options.sharing->Apply(uid, claim.sharing, claim.uuids);
    if (!applied.ok()) {
      GPULET_LOG(WARNING) << "claim " << ClaimName(claim.ref)
                          << ": applying its sharing again: "
                          << applied.status().message();
      continue;
    }
    reapplied[uid] = *std::move(applied);
  }
  return std::unique_ptr<ClaimPreparer>(
      new ClaimPreparer(std::move(options), std::move(get_claim),
                        std::move(prepared), std::move(reapplied)));
}

ClaimPreparer::ClaimPreparer(PreparerOptions options, ClaimGetter get_claim,
                             PreparedClaims prepared,
                             std::map<std::string, SharingEdits> reapplied)
    : options_(std::move(options)),
      get_claim_(std::move(get_claim)),
      prepared_(std::move(prepared)),
      reapplied_(std::move(reapplied)) {}

void ClaimPreparer::SetNode(device::Node node, cdi::Spec node_spec) {
  absl::MutexLock lock(&mu_);
  node_ = std::move(node);
  node_spec_ = std::move(node_spec);
  const bool first = !have_node_;
  have_node_ = true;
  if (first) RewriteSpecs();
}

absl::StatusOr<PreparedClaim> ClaimPreparer::PrepareNew(
    const ClaimRef& ref, const nlohmann::json& object) {
  if (!have_node_) {
    return absl::UnavailableError(
        absl::StrCat("claim ", ClaimName(ref), ": GPUs not discovered yet"));
  }
  GPULET_ASSIGN_OR_RETURN(
      ClaimAllocation allocation,
      ReadAllocation(object, ref, options_.driver, options_.pool));
  if (allocation.devices.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "claim ", ClaimName(ref), ": its allocation has no device of driver ",
        options_.driver, " in pool ", options_.pool));
  }
  GPULET_ASSIGN_OR_RETURN(ClaimSharing sharing,
                          ParseClaimConfig(allocation.configs, ref));
  GPULET_RETURN_IF_ERROR(CheckNotPrepared(ref, allocation.devices));
  PreparedClaim claim;
  claim.ref = ref;
  claim.cdi_spec_path = ClaimSpecPath(options_.cdi_dir, ref.uid);
  GPULET_ASSIGN_OR_RETURN(std::vector<ClaimDevice> cdi_devices,
                          ResolveDevices(ref, allocation.devices, claim));
  GPULET_ASSIGN_OR_RETURN(
      SharingEdits edits,
      ApplySharing(ref, sharing, allocation.devices, cdi_devices, claim));
  absl::Status written = WriteSpec(ref, cdi_devices, edits, claim);
  if (!written.ok()) {
    ReleaseSharing(claim);
    return written;
  }
  return claim;
}

absl::Status ClaimPreparer::CheckNotPrepared(
    const ClaimRef& ref, const std::vector<AllocatedDevice>& allocated) const {
  for (const AllocatedDevice& d : allocated) {
    if (d.admin_access) continue;
    for (const auto& [uid, other] : prepared_) {
      if (uid == ref.uid) continue;
      for (const PreparedDevice& held : other.devices) {
        if (held.admin_access || held.device != d.device ||
            held.pool != d.pool) {
          continue;
        }
        // Shares of a device published for several allocations
        // (DRAConsumableCapacity) live side by side.
        if (held.share_id.has_value() && d.share_id.has_value()) continue;
        return absl::FailedPreconditionError(absl::StrCat(
            "claim ", ClaimName(ref), ": device ", d.device, " of pool ",
            d.pool, " is prepared for claim ", ClaimName(other.ref), " (uid ",
            uid,
            "); a device is given to one claim at a time unless allocated "
            "with adminAccess or as a share, so the allocation is taken for "
            "the scheduler's double booking and the claim waits until that "
            "claim is unprepared"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ClaimDevice>> ClaimPreparer::ResolveDevices(
    const ClaimRef& ref, const std::vector<AllocatedDevice>& allocated,
    PreparedClaim& claim) {
  std::vector<ClaimDevice> cdi_devices;
  for (const AllocatedDevice& d : allocated) {
    absl::StatusOr<DeviceRef> parsed = ParseDeviceName(d.device);
    absl::StatusOr<std::string> uuid =
        parsed.ok() ? ResolveDevice(node_, *parsed, d.device)
                    : absl::StatusOr<std::string>(parsed.status());
    if (!uuid.ok()) {
      return absl::Status(uuid.status().code(),
                          absl::StrCat("claim ", ClaimName(ref), ": ",
                                       uuid.status().message()));
    }
    const std::string share = d.share_id.value_or("");
    cdi_devices.push_back({.dra_name = d.device,
                           .uuid = *uuid,
                           .share_id = share,
                           .env = ShareEnv(d.consumed_memory)});
    claim.devices.push_back(
        {.requests = d.requests,
         .pool = d.pool,
         .device = d.device,
         .cdi_device_ids = {ClaimCdiId(ref.uid, d.device, share)},
         .share_id = d.share_id,
         .uuid = *uuid,
         .consumed_memory = d.consumed_memory,
         .admin_access = d.admin_access});
  }
  return cdi_devices;
}

absl::StatusOr<SharingEdits> ClaimPreparer::ApplySharing(
    const ClaimRef& ref, const ClaimSharing& sharing,
    const std::vector<AllocatedDevice>& allocated,
    std::vector<ClaimDevice>& devices, PreparedClaim& claim) {
  SharingEdits edits;
  if (sharing.strategy.empty()) return edits;
  if (options_.sharing == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("claim ", ClaimName(ref), ": sharing strategy ",
                     sharing.strategy, " is not available on this node"));
  }
  for (const ClaimDevice& d : devices) {
    // Two shares of one GPU are one device to the daemon and the policy.
    if (std::find(claim.uuids.begin(), claim.uuids.end(), d.uuid) ==
        claim.uuids.end()) {
      claim.uuids.push_back(d.uuid);
    }
  }
  absl::StatusOr<SharingEdits> applied =
      options_.sharing->Apply(ref.uid, sharing, claim.uuids);
  if (!applied.ok()) {
    return absl::Status(applied.status().code(),
                        absl::StrCat("claim ", ClaimName(ref), ": ",
                                     applied.status().message()));
  }
  claim.sharing = sharing;
  edits.env.insert(edits.env.end(), applied->env.begin(), applied->env.end());
  edits.mounts = std::move(applied->mounts);
  AddMpsLimit(
      sharing,
      allocated.size() == 1 ? allocated[0].consumed_memory : std::nullopt,
      devices);
  return edits;
}

std::vector<std::string> ClaimPreparer::ShareEnv(
    std::optional<int64_t> consumed_memory) {
  if (!consumed_memory.has_value()) return {};
  // MiB, as the device plugin's memory shares tell it; a share is whole
  // steps of the GPU's request policy, so nothing is lost.
  return {absl::StrCat(sharing::kMemoryLimitEnv, "=", *consumed_memory >> 20)};
}

void ClaimPreparer::AddMpsLimit(const ClaimSharing& sharing,
                                std::optional<int64_t> only_memory,
                                std::vector<ClaimDevice>& devices) {
  // MPS enforces a memory share: the client's pinned device memory. The
  // container sees the claim's one GPU as device 0, so the limit is
  // given for a claim of one shared device only.
  if (sharing.strategy == "MPS" && devices.size() == 1 &&
      only_memory.has_value()) {
    devices[0].env.push_back(
        absl::StrCat(sharing::kMpsPinnedMemLimitEnv, "=",
                     sharing::MpsPinnedMemLimit(*only_memory >> 20)));
  }
}

void ClaimPreparer::ReleaseSharing(const PreparedClaim& claim) {
  if (claim.sharing.strategy.empty() || options_.sharing == nullptr) return;
  absl::Status released = options_.sharing->Release(claim.ref.uid);
  if (!released.ok()) {
    GPULET_LOG(WARNING) << "claim " << ClaimName(claim.ref)
                        << ": releasing its sharing: " << released.message();
  }
}

absl::Status ClaimPreparer::WriteSpec(const ClaimRef& ref,
                                      const std::vector<ClaimDevice>& devices,
                                      const SharingEdits& edits,
                                      const PreparedClaim& claim) {
  GPULET_ASSIGN_OR_RETURN(
      cdi::Spec spec, BuildClaimSpec(node_spec_, ref.uid, devices, edits.env));
  for (cdi::Device& device : spec.devices) {
    device.edits.mounts.insert(device.edits.mounts.end(), edits.mounts.begin(),
                               edits.mounts.end());
  }
  spec.cdi_version = cdi::MinimumVersion(spec);
  return common::WriteFileAtomic(claim.cdi_spec_path,
                                 cdi::FormatSpec(spec, cdi::Format::kJson),
                                 {.mode = 0644, .durable = true});
}

std::map<std::string, absl::StatusOr<nlohmann::json>> ClaimPreparer::ReadNew(
    const std::vector<ClaimRef>& claims, std::stop_token stop) {
  std::vector<ClaimRef> wanted;
  {
    absl::MutexLock lock(&mu_);
    if (!have_node_) return {};
    for (const ClaimRef& ref : claims) {
      if (CheckClaimUid(ref).ok() && !prepared_.contains(ref.uid)) {
        wanted.push_back(ref);
      }
    }
  }
  std::map<std::string, absl::StatusOr<nlohmann::json>> read;
  for (const ClaimRef& ref : wanted) {
    if (read.contains(ref.uid)) continue;
    absl::StatusOr<nlohmann::json> object = get_claim_(ref, stop);
    if (!object.ok() && stop.stop_requested()) {
      object = absl::DeadlineExceededError(absl::StrCat(
          "claim ", ClaimName(ref), " (node ", options_.pool,
          "): the ResourceClaim was not read from the API server before the "
          "call's deadline: ",
          object.status().message()));
    }
    read.emplace(ref.uid, std::move(object));
  }
  return read;
}

std::map<std::string, PrepareResult> ClaimPreparer::Prepare(
    const std::vector<ClaimRef>& claims, std::stop_token stop) {
  const common::Clock& clock = common::RealClock::Get();
  const absl::Time start = clock.Now();
  std::map<std::string, PrepareResult> out = PrepareClaims(claims, stop);
  if (options_.observer != nullptr) {
    options_.observer->Prepared(claims, out, clock.Now() - start);
  }
  return out;
}

std::map<std::string, absl::Status> ClaimPreparer::Unprepare(
    const std::vector<ClaimRef>& claims) {
  const common::Clock& clock = common::RealClock::Get();
  const absl::Time start = clock.Now();
  std::map<std::string, absl::Status> out = UnprepareClaims(claims);
  if (options_.observer != nullptr) {
    options_.observer->Unprepared(claims, out, clock.Now() - start);
  }
  return out;
}

std::map<std::string, PrepareResult> ClaimPreparer::PrepareClaims(
    const std::vector<ClaimRef>& claims, std::stop_token stop) {
  std::map<std::string, absl::StatusOr<nlohmann::json>> read =
      ReadNew(claims, stop);
  absl::MutexLock lock(&mu_);
  std::map<std::string, PrepareResult> out;
  std::vector<std::string> added;
  for (const ClaimRef& ref : claims) {
    if (out.contains(ref.uid)) continue;
    PrepareResult& result = out[ref.uid];
    result.status = CheckClaimUid(ref);
    if (!result.status.ok()) continue;
    if (auto it = prepared_.find(ref.uid); it != prepared_.end()) {
      if (!SameClaim(it->second.ref, ref)) {
        result.status = absl::InvalidArgumentError(
            absl::StrCat("claim ", ClaimName(ref), ": uid ", ref.uid,
                         " was prepared as ", ClaimName(it->second.ref)));
      } else {
        result.devices = it->second.devices;
      }
      continue;
    }
    auto object = read.find(ref.uid);
    absl::StatusOr<PreparedClaim> claim =
        object == read.end()
            // Not read: no GPUs then, or prepared and unprepared by other
            // requests meanwhile. The kubelet asks again.
            ? absl::StatusOr<PreparedClaim>(absl::UnavailableError(
                  absl::StrCat("claim ", ClaimName(ref),
                               ": GPUs not discovered yet, or the claim "
                               "changed while being read")))
            : object->second.ok()
                  ? PrepareNew(ref, *object->second)
                  : absl::StatusOr<PreparedClaim>(object->second.status());
    if (!claim.ok()) {
      result.status = claim.status();
      continue;
    }
    result.devices = claim->devices;
    result.claim = *object->second;
    prepared_[ref.uid] = *std::move(claim);
    added.push_back(ref.uid);
  }
  if (added.empty()) return out;
  absl::Status saved = SaveCheckpoint(options_.checkpoint_path, prepared_);
  if (!saved.ok()) {
    for (const std::string& uid : added) {
      (void)RemoveFile(prepared_[uid].cdi_spec_path);
      ReleaseSharing(prepared_[uid]);
      prepared_.erase(uid);
      out[uid] = PrepareResult{{}, saved, nullptr};
    }
    return out;
  }
  if (options_.after_checkpoint) options_.after_checkpoint();
  return out;
}

std::map<std::string, absl::Status> ClaimPreparer::UnprepareClaims(
    const std::vector<ClaimRef>& claims) {
  absl::MutexLock lock(&mu_);
  std::map<std::string, absl::Status> out;
  PreparedClaims removed;
  for (const ClaimRef& ref : claims) {
    if (out.contains(ref.uid)) continue;
    absl::Status& status = out[ref.uid];
    auto it = prepared_.find(ref.uid);
    if (it == prepared_.end()) continue;
    status = RemoveFile(it->second.cdi_spec_path);
    if (!status.ok()) continue;
    ReleaseSharing(it->second);
    removed.insert(prepared_.extract(it));
  }
  if (removed.empty()) return out;
  absl::Status saved = SaveCheckpoint(options_.checkpoint_path, prepared_);
  if (!saved.ok()) {
    // Still checkpointed: the kubelet retries, and removing a spec that is
    // already gone succeeds.
    for (auto& [uid, claim] : removed) out[uid] = saved;
    prepared_.merge(removed);
  }
  return out;
}

PreparedClaims ClaimPreparer::Prepared() const {
  absl::MutexLock lock(&mu_);
  return prepared_;
}

}  // namespace gpulet::dra
