#include "src/base/config/validate.h"

#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/config/config_errors.h"
#include "src/base/config/names.h"

namespace gpulet::config {
namespace {

using internal::IndexPath;
using internal::JoinPath;
using internal::Quote;

constexpr int kMaxDeviceCount = 4096;

// Validation of one Config: the origins give every error its position.
class Checker {
 public:
  explicit Checker(const Config& config) : config_(config) {}

  absl::Status Error(const std::string& path, absl::string_view what) const {
    return internal::PathError(config_.origins, path, what);
  }

  absl::Status AbsolutePath(const std::string& path, const std::string& value,
                            bool empty_ok) const {
    if (value.empty() && empty_ok) return absl::OkStatus();
    if (value.empty() || value[0] != '/') {
      return Error(
          path, absl::StrCat("must be an absolute path, got ", Quote(value)));
    }
    return absl::OkStatus();
  }

  absl::Status ResourceName(const std::string& path,
                            const std::string& name) const {
    absl::Status s = CheckQualifiedResourceName(name);
    return s.ok() ? s : Error(path, s.message());
  }

  absl::Status Flags() const;
  absl::Status Resources() const;
  absl::Status Devices(const std::string& path,
                       const ReplicaDevices& devices) const;
  absl::Status Replicated(const std::string& path,
                          const ReplicatedResources& section) const;
  absl::Status Memory(const MemoryShares& memory) const;
  absl::Status Imex() const;
  absl::Status Health() const;
  absl::Status Metrics() const;
  absl::Status Passthrough(const config::Passthrough& p) const;

 private:
  const Config& config_;
};

absl::Status Checker::Flags() const {
  const config::Flags& f = config_.flags;
  const PluginFlags& p = f.plugin;
  if (p.device_list_strategy.empty()) {
    return Error(
        "flags.plugin.deviceListStrategy",
        absl::StrCat(
            "no device list strategy specified; at least "
            "one of ",
            absl::StrJoin(internal::NamesOf(DeviceListStrategyNames()), ", "),
            " is required"));
  }
  if (absl::Status s = CheckCdiAnnotationPrefix(p.cdi_annotation_prefix);
      !s.ok()) {
    return Error("flags.plugin.cdiAnnotationPrefix", s.message());
  }
  const std::pair<const char*, const std::string*> paths[] = {
      {"flags.nvidiaDriverRoot", &f.nvidia_driver_root},
      {"flags.plugin.containerDriverRoot", &p.container_driver_root},
      {"flags.plugin.nvidiaCTKPath", &p.nvidia_ctk_path}};
  for (const auto& [path, value] : paths) {
    GPULET_RETURN_IF_ERROR(AbsolutePath(path, *value, false));
  }
  const std::pair<const char*, const std::string*> optional_paths[] = {
      {"flags.nvidiaDevRoot", &f.nvidia_dev_root},
      {"flags.mpsRoot", &f.mps_root},
      {"flags.plugin.kubeletSocket", &p.kubelet_socket}};
  for (const auto& [path, value] : optional_paths) {
    GPULET_RETURN_IF_ERROR(AbsolutePath(path, *value, true));
  }
  return absl::OkStatus();
}

absl::Status Checker::Resources() const {
  const std::pair<const char*, const std::vector<Resource>*> lists[] = {
      {"resources.gpus", &config_.resources.gpus},
      {"resources.mig", &config_.resources.mig}};
  for (const auto& [list_path, list] : lists) {
    for (size_t i = 0; i < list->size(); ++i) {
      std::string base = IndexPath(list_path, i);
      if ((*list)[i].pattern.empty()) {
        return Error(JoinPath(base, "pattern"), "must not be empty");
      }
      GPULET_RETURN_IF_ERROR(
          ResourceName(JoinPath(base, "name"), (*list)[i].name));
    }
  }
  return absl::OkStatus();
}

absl::Status Checker::Devices(const std::string& path,
                              const ReplicaDevices& devices) const {
  switch (devices.kind) {
    case ReplicaDevices::Kind::kAll:
      return absl::OkStatus();
    case ReplicaDevices::Kind::kCount:
      if (devices.count < 1 || devices.count > kMaxDeviceCount) {
        return Error(path,
                     absl::StrCat("a device count must be in [1, ",
                                  kMaxDeviceCount, "], got ", devices.count));
      }
      return absl::OkStatus();
    case ReplicaDevices::Kind::kList:
      for (size_t i = 0; i < devices.list.size(); ++i) {
        if (ClassifyDeviceRef(devices.list[i]) == DeviceRefKind::kInvalid) {
          return Error(IndexPath(path, i),
                       absl::StrCat(Quote(devices.list[i]),
                                    " is not a GPU index, a MIG index (i:j), "
                                    "or a GPU-/MIG- UUID"));
        }
      }
      return absl::OkStatus();
  }
  return Error(path, "unknown kind of device selection");
}

absl::Status Checker::Replicated(const std::string& path,
                                 const ReplicatedResources& section) const {
  const std::string list_path = JoinPath(path, "resources");
  if (section.resources.empty()) {
    return Error(list_path, "no resources specified");
  }
  std::map<std::string, size_t> names;            // name -> its first entry
  std::map<std::string, size_t> adv_source;       // advertised -> first entry
  std::map<std::string, std::string> advertised;  // advertised -> its path
  for (size_t i = 0; i < section.resources.size(); ++i) {
    const ReplicatedResource& r = section.resources[i];
    const std::string base = IndexPath(list_path, i);
    GPULET_RETURN_IF_ERROR(ResourceName(JoinPath(base, "name"), r.name));
    if (!r.rename.empty()) {
      GPULET_RETURN_IF_ERROR(ResourceName(JoinPath(base, "rename"), r.rename));
    }
    if (r.replicas < 2 || r.replicas > kMaxReplicas) {
      return Error(JoinPath(base, "replicas"),
                   r.replicas < 2
                       ? absl::StrCat("must be >= 2, got ", r.replicas)
                       : absl::StrCat("must be <= ", kMaxReplicas, ", got ",
                                      r.replicas));
    }
    GPULET_RETURN_IF_ERROR(Devices(JoinPath(base, "devices"), r.devices));
    // One resource may be split over several entries (different replica
    // counts for different GPUs) when each entry lists its devices.
    auto [it, added] = names.emplace(r.name, i);
    if (!added && (r.devices.kind != ReplicaDevices::Kind::kList ||
                   section.resources[it->second].devices.kind !=
                       ReplicaDevices::Kind::kList)) {
      return Error(JoinPath(base, "name"),
                   absl::StrCat("duplicate resource ", r.name, " (also at ",
                                IndexPath(list_path, it->second),
                                "); entries sharing one resource must each "
                                "list their devices"));
    }
    std::string shared = AdvertisedName(section, r);
    auto [adv, adv_added] = advertised.emplace(shared, base);
    if (!adv_added && section.resources[adv_source[shared]].name != r.name) {
      return Error(JoinPath(base, r.rename.empty() ? "name" : "rename"),
                   absl::StrCat("advertised name ", shared, " is also used by ",
                                adv->second));
    }
    adv_source.emplace(shared, i);
    if (shared != r.name) {
      GPULET_RETURN_IF_ERROR(ResourceName(JoinPath(base, "rename"), shared));
    }
  }
  return absl::OkStatus();
}

absl::Status Checker::Memory(const MemoryShares& m) const {
  if (absl::Status s = CheckExtendedResourceName(m.resource_name); !s.ok()) {
    return Error("sharing.memory.resourceName", s.message());
  }
  if (m.unit_mib < 1 || m.unit_mib > kMaxMemoryUnitMib) {
    return Error("sharing.memory.unit",
                 absl::StrCat("must be between 1MiB and 1024GiB, got ",
                              m.unit_mib, "MiB"));
  }
  GPULET_RETURN_IF_ERROR(Devices("sharing.memory.devices", m.devices));
  for (size_t i = 0; i < m.devices.list.size(); ++i) {
    DeviceRefKind kind = ClassifyDeviceRef(m.devices.list[i]);
    if (kind != DeviceRefKind::kGpuIndex && kind != DeviceRefKind::kGpuUuid) {
      return Error(IndexPath("sharing.memory.devices", i),
                   absl::StrCat(Quote(m.devices.list[i]),
                                " is not a GPU index or a GPU- UUID (memory "
                                "shares are of whole GPUs)"));
    }
  }
  if (m.max_devices_per_node < 1 ||
      m.max_devices_per_node > kMaxMemoryDevicesPerNode) {
    return Error("sharing.memory.maxDevicesPerNode",
                 absl::StrCat("must be in [1, ", kMaxMemoryDevicesPerNode,
                              "], got ", m.max_devices_per_node));
  }
  if (m.pending_timeout < absl::Seconds(1)) {
    return Error("sharing.memory.pendingTimeout",
                 absl::StrCat("must be at least 1s, got ",
                              absl::FormatDuration(m.pending_timeout)));
  }
  if (m.mps_compute_by_share && !m.mps) {
    return Error("sharing.memory.mps.computeByShare",
                 "needs sharing.memory.mps.enabled: true");
  }
  if (m.resync_period < absl::Seconds(10)) {
    return Error("sharing.memory.resyncPeriod",
                 absl::StrCat("must be at least 10s, got ",
                              absl::FormatDuration(m.resync_period)));
  }
  return absl::OkStatus();
}

absl::Status Checker::Imex() const {
  const std::vector<int>& ids = config_.imex.channel_ids;
  if (ids.empty() || (ids.size() == 1 && ids[0] == 0)) {
    return absl::OkStatus();
  }
  return Error("imex.channelIDs", absl::StrCat("must be [] or [0]; found [",
                                               absl::StrJoin(ids, ", "), "]"));
}

absl::Status Checker::Health() const {
  const config::Health& h = config_.health;
  std::map<uint64_t, std::string> ignored;  // Xid -> its path
  for (size_t i = 0; i < h.ignored_xids.size(); ++i) {
    ignored.emplace(h.ignored_xids[i], IndexPath("health.ignoredXids", i));
  }
  std::map<uint64_t, std::string> ruled;  // Xid -> its path
  for (size_t r = 0; r < h.xids.size(); ++r) {
    const std::string base = IndexPath("health.xids", r);
    const XidRule& rule = h.xids[r];
    if (rule.codes.empty()) {
      return Error(JoinPath(base, "codes"), "must list at least one Xid");
    }
    for (size_t i = 0; i < rule.codes.size(); ++i) {
      const uint64_t xid = rule.codes[i];
      const std::string path = IndexPath(JoinPath(base, "codes"), i);
      auto [it, added] = ruled.emplace(xid, path);
      if (!added) {
        return Error(path, absl::StrCat("Xid ", xid, " already has an action (",
                                        it->second, ")"));
      }
      auto listed = ignored.find(xid);
      if (rule.action != XidAction::kIgnore && listed != ignored.end()) {
        return Error(path, absl::StrCat("Xid ", xid, " is also ignored by ",
                                        listed->second, "; choose one"));
      }
    }
  }
  return absl::OkStatus();
}

// "host:port" as common::ParseListenAddress reads it; config cannot
// depend on that layer, and the check is small.
absl::Status Checker::Metrics() const {
  const config::Metrics& m = config_.metrics;
  if (!m.tls_cert_file.empty() && m.tls_key_file.empty()) {
    return Error("metrics.tlsCertFile",
                 "needs its key too: give metrics.tlsKeyFile "
                 "(--metrics-tls-key-file)");
  }
  if (m.tls_cert_file.empty() && !m.tls_key_file.empty()) {
    return Error("metrics.tlsKeyFile",
                 "needs its certificate too: give metrics.tlsCertFile "
                 "(--metrics-tls-cert-file)");
  }
  if (!m.client_ca_file.empty() && m.tls_cert_file.empty()) {
    return Error("metrics.clientCAFile",
                 "client certificates need TLS: give metrics.tlsCertFile and "
                 "metrics.tlsKeyFile (--metrics-tls-cert-file, "
                 "--metrics-tls-key-file)");
  }
  const std::string& address = m.address;
  if (address.empty()) return absl::OkStatus();
  const size_t colon = address.rfind(':');
  const std::string port =
      colon == std::string::npos ? "" : address.substr(colon + 1);
  const std::string host =
      address.substr(0, colon == std::string::npos ? address.size() : colon);
  int number = 0;
  bool ok = !port.empty() && port.size() <= 5 &&
            port.find_first_not_of("0123456789") == std::string::npos &&
            absl::SimpleAtoi(port, &number) && number <= 65535;
  const bool bracketed = !host.empty() && host.front() == '[';
  if (bracketed) {
    ok = ok && host.size() >= 2 && host.back() == ']';
  } else {
    ok = ok && host.find(':') == std::string::npos;
  }
  if (ok) return absl::OkStatus();
  return Error("metrics.address",
               absl::StrCat(Quote(address),
                            " is not host:port with a port in [0, 65535] "
                            "(e.g. \":9400\", \"127.0.0.1:9400\", "
                            "\"[::1]:9400\")"));
}

absl::Status Checker::Passthrough(const config::Passthrough& p) const {
  if (p.devices.empty() && !p.mdevs) {
    return Error("passthrough.devices",
                 "selects no GPU and mdevs is off; remove the passthrough "
                 "section to turn passthrough off");
  }
  const std::pair<const char*, const std::string*> paths[] = {
      {"passthrough.sysRoot", &p.sys_root},
      {"passthrough.devRoot", &p.dev_root}};
  for (const auto& [path, value] : paths) {
    GPULET_RETURN_IF_ERROR(AbsolutePath(path, *value, /*empty_ok=*/false));
  }
  GPULET_RETURN_IF_ERROR(AbsolutePath("passthrough.hostDevRoot",
                                      p.host_dev_root, /*empty_ok=*/true));
  GPULET_RETURN_IF_ERROR(
      AbsolutePath("passthrough.pciIds", p.pci_ids, /*empty_ok=*/true));
  GPULET_RETURN_IF_ERROR(AbsolutePath("passthrough.ueventSocket",
                                      p.uevent_socket, /*empty_ok=*/true));
  if (p.resync_period && *p.resync_period < absl::Seconds(1)) {
    return Error("passthrough.resyncPeriod",
                 absl::StrCat("must be at least 1s, got ",
                              absl::FormatDuration(*p.resync_period)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateValues(const Config& config) {
  Checker check(config);
  if (config.version != kConfigVersion) {
    return check.Error(
        "version",
        absl::StrCat("unknown version ", Quote(config.version),
                     " (gpulet reads version: ", kConfigVersion, " files)"));
  }
  GPULET_RETURN_IF_ERROR(check.Flags());
  GPULET_RETURN_IF_ERROR(check.Resources());
  if (config.sharing.time_slicing) {
    GPULET_RETURN_IF_ERROR(
        check.Replicated("sharing.timeSlicing", *config.sharing.time_slicing));
  }
  if (config.sharing.mps) {
    GPULET_RETURN_IF_ERROR(
        check.Replicated("sharing.mps", *config.sharing.mps));
  }
  if (config.sharing.memory) {
    GPULET_RETURN_IF_ERROR(check.Memory(*config.sharing.memory));
  }
  GPULET_RETURN_IF_ERROR(check.Imex());
  GPULET_RETURN_IF_ERROR(check.Health());
  if (config.passthrough) {
    GPULET_RETURN_IF_ERROR(check.Passthrough(*config.passthrough));
  }
  return check.Metrics();
}

absl::Status Validate(const Config& config) {
  GPULET_RETURN_IF_ERROR(ValidateValues(config));
  Checker check(config);
  if (config.sharing.memory && config.sharing.memory->mps &&
      config.flags.mps_root.empty()) {
    return check.Error("sharing.memory.mps.enabled",
                       "MPS for memory shares needs an MPS root directory "
                       "(--mps-root, MPS_ROOT or flags.mpsRoot)");
  }
  if (!config.sharing.mps) return absl::OkStatus();
  if (config.sharing.time_slicing) {
    return check.Error("sharing.mps",
                       "cannot be combined with sharing.timeSlicing; choose "
                       "one (NVIDIA's plugin would silently ignore "
                       "timeSlicing)");
  }
  if (config.flags.mig_strategy == MigStrategy::kMixed) {
    return check.Error("flags.migStrategy",
                       "mixed is not supported together with sharing.mps");
  }
  if (config.flags.mps_root.empty()) {
    return check.Error("flags.mpsRoot",
                       "sharing.mps needs an MPS root directory "
                       "(--mps-root, MPS_ROOT or flags.mpsRoot)");
  }
  return absl::OkStatus();
}

}  // namespace gpulet::config
