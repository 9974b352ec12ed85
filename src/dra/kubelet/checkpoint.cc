#include "src/dra/kubelet/checkpoint.h"

#include <cerrno>
#include <cstdint>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/base/common/file_util.h"
#include "src/base/common/status_macros.h"

namespace gpulet::dra {
namespace {

using json = nlohmann::json;

constexpr int kVersion = 1;

// FNV-1a over the claims' canonical text: catches a truncated or edited
// file, which the atomic write alone cannot rule out (disk errors, people).
std::string Checksum(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return absl::StrFormat("%016x", hash);
}

json DeviceToJson(const PreparedDevice& d) {
  json out = {{"requests", d.requests},
              {"pool", d.pool},
              {"device", d.device},
              {"cdiDeviceIDs", d.cdi_device_ids}};
  if (d.share_id) out["shareID"] = *d.share_id;
  if (!d.uuid.empty()) out["uuid"] = d.uuid;
  if (d.consumed_memory) out["consumedMemory"] = *d.consumed_memory;
  if (d.admin_access) out["adminAccess"] = true;
  return out;
}

json ClaimsToJson(const PreparedClaims& claims) {
  json out = json::object();
  for (const auto& [uid, claim] : claims) {
    json devices = json::array();
    for (const PreparedDevice& d : claim.devices) {
      devices.push_back(DeviceToJson(d));
    }
    out[uid] = {{"namespace", claim.ref.namespace_name},
                {"name", claim.ref.name},
                {"devices", std::move(devices)},
                {"cdiSpec", claim.cdi_spec_path}};
    if (!claim.sharing.strategy.empty()) {
      json sharing = {{"strategy", claim.sharing.strategy},
                      {"interval", claim.sharing.interval},
                      {"uuids", claim.uuids}};
      if (claim.sharing.active_thread_percentage) {
        sharing["activeThreadPercentage"] =
            *claim.sharing.active_thread_percentage;
      }
      if (claim.sharing.pinned_memory_limit) {
        sharing["pinnedMemoryLimit"] = *claim.sharing.pinned_memory_limit;
      }
      if (!claim.sharing.per_device_pinned_memory_limit.empty()) {
        sharing["perDevicePinnedMemoryLimit"] =
            claim.sharing.per_device_pinned_memory_limit;
      }
      out[uid]["sharing"] = std::move(sharing);
    }
  }
  return out;
}

absl::Status Bad(const std::string& source, const std::string& what) {
  return absl::DataLossError(absl::StrCat("checkpoint ", source, ": ", what));
}

std::vector<std::string> Strings(const json& value) {
  std::vector<std::string> out;
  for (const json& s : value) out.push_back(s.get<std::string>());
  return out;
}

PreparedClaim ClaimFromJson(const std::string& uid, const json& value) {
  PreparedClaim claim;
  claim.ref = {.namespace_name = value.at("namespace").get<std::string>(),
               .name = value.at("name").get<std::string>(),
               .uid = uid};
  claim.cdi_spec_path = value.at("cdiSpec").get<std::string>();
  for (const json& d : value.at("devices")) {
    PreparedDevice device;
    device.requests = Strings(d.at("requests"));
    device.pool = d.at("pool").get<std::string>();
    device.device = d.at("device").get<std::string>();
    device.cdi_device_ids = Strings(d.at("cdiDeviceIDs"));
    if (d.contains("shareID"))
      device.share_id = d["shareID"].get<std::string>();
    // Absent in files of earlier releases.
    if (d.contains("uuid")) device.uuid = d["uuid"].get<std::string>();
    if (d.contains("consumedMemory")) {
      device.consumed_memory = d["consumedMemory"].get<int64_t>();
    }
    if (d.contains("adminAccess")) {
      device.admin_access = d["adminAccess"].get<bool>();
    }
    claim.devices.push_back(std::move(device));
  }
  // Absent in files of claims without sharing (and of earlier releases).
  if (auto sharing = value.find("sharing"); sharing != value.end()) {
    claim.sharing.strategy = sharing->at("strategy").get<std::string>();
    claim.sharing.interval = sharing->at("interval").get<std::string>();
    if (sharing->contains("activeThreadPercentage")) {
      claim.sharing.active_thread_percentage =
          sharing->at("activeThreadPercentage").get<int>();
    }
    // Absent in files of earlier releases, which did not apply them.
    if (sharing->contains("pinnedMemoryLimit")) {
      claim.sharing.pinned_memory_limit =
          sharing->at("pinnedMemoryLimit").get<int64_t>();
    }
    if (sharing->contains("perDevicePinnedMemoryLimit")) {
      claim.sharing.per_device_pinned_memory_limit =
          sharing->at("perDevicePinnedMemoryLimit")
              .get<std::map<std::string, int64_t>>();
    }
    claim.uuids = Strings(sharing->at("uuids"));
  }
  return claim;
}

}  // namespace

std::string EncodeCheckpoint(const PreparedClaims& claims) {
  json body = ClaimsToJson(claims);
  json file = {{"version", kVersion},
               {"checksum", Checksum(body.dump())},
               {"claims", std::move(body)}};
  return file.dump(2) + "\n";
}

absl::StatusOr<PreparedClaims> DecodeCheckpoint(const std::string& text,
                                                const std::string& source) {
  json file = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (file.is_discarded() || !file.is_object()) return Bad(source, "not JSON");
  if (file.value("version", 0) != kVersion) {
    return Bad(source, absl::StrCat("version ", file.value("version", 0),
                                    " is not ", kVersion));
  }
  auto claims = file.find("claims");
  if (claims == file.end() || !claims->is_object())
    return Bad(source, "claims is not an object");
  if (file.value("checksum", std::string()) != Checksum(claims->dump())) {
    return Bad(source, "checksum mismatch (truncated or edited)");
  }
  PreparedClaims out;
  for (const auto& [uid, value] : claims->items()) {
    try {
      out[uid] = ClaimFromJson(uid, value);
    } catch (const json::exception& e) {
      return Bad(source, absl::StrCat("claim ", uid, ": ", e.what()));
    }
  }
  return out;
}

absl::StatusOr<PreparedClaims> LoadCheckpoint(const std::string& path) {
  absl::StatusOr<std::string> text = common::ReadFile(path);
  if (absl::IsNotFound(text.status())) return PreparedClaims{};
  if (!text.ok()) return text.status();
  return DecodeCheckpoint(*text, path);
}

absl::Status SaveCheckpoint(const std::string& path,
                            const PreparedClaims& claims) {
  return common::WriteFileAtomic(path, EncodeCheckpoint(claims),
                                 {.mode = 0600, .durable = true});
}

}  // namespace gpulet::dra
