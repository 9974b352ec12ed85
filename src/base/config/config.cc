#include "src/base/config/config.h"

#include "absl/strings/str_cat.h"
#include "src/base/config/names.h"

namespace gpulet::config {
namespace {

template <typename E>
std::string NameOf(const EnumNames<E>& names, E value) {
  for (const auto& [name, v] : names) {
    if (v == value) return name;
  }
  return absl::StrCat("unknown(", static_cast<int>(value), ")");
}

}  // namespace

const EnumNames<MigStrategy>& MigStrategyNames() {
  static const EnumNames<MigStrategy> names = {{"none", MigStrategy::kNone},
                                               {"single", MigStrategy::kSingle},
                                               {"mixed", MigStrategy::kMixed}};
  return names;
}

const EnumNames<DeviceListStrategy>& DeviceListStrategyNames() {
  static const EnumNames<DeviceListStrategy> names = {
      {"envvar", DeviceListStrategy::kEnvvar},
      {"volume-mounts", DeviceListStrategy::kVolumeMounts},
      {"cdi-annotations", DeviceListStrategy::kCdiAnnotations},
      {"cdi-cri", DeviceListStrategy::kCdiCri}};
  return names;
}

const EnumNames<DeviceIdStrategy>& DeviceIdStrategyNames() {
  static const EnumNames<DeviceIdStrategy> names = {
      {"uuid", DeviceIdStrategy::kUuid}, {"index", DeviceIdStrategy::kIndex}};
  return names;
}

const EnumNames<SharedDevicesAllocationPolicy>& AllocationPolicyNames() {
  static const EnumNames<SharedDevicesAllocationPolicy> names = {
      {"distributed", SharedDevicesAllocationPolicy::kDistributed},
      {"packed", SharedDevicesAllocationPolicy::kPacked}};
  return names;
}

const EnumNames<DeviceDiscoveryStrategy>& DeviceDiscoveryStrategyNames() {
  static const EnumNames<DeviceDiscoveryStrategy> names = {
      {"auto", DeviceDiscoveryStrategy::kAuto},
      {"nvml", DeviceDiscoveryStrategy::kNvml}};
  return names;
}

const EnumNames<MemoryPolicy>& MemoryPolicyNames() {
  static const EnumNames<MemoryPolicy> names = {
      {"binpack", MemoryPolicy::kBinpack}, {"spread", MemoryPolicy::kSpread}};
  return names;
}

std::string ToString(MemoryPolicy value) {
  return NameOf(MemoryPolicyNames(), value);
}

const EnumNames<XidAction>& XidActionNames() {
  static const EnumNames<XidAction> names = {
      {"ignore", XidAction::kIgnore},
      {"unhealthy", XidAction::kUnhealthy},
      {"reset", XidAction::kReset}};
  return names;
}

const EnumNames<TaintEffect>& TaintEffectNames() {
  static const EnumNames<TaintEffect> names = {
      {"None", TaintEffect::kNone},
      {"NoSchedule", TaintEffect::kNoSchedule},
      {"NoExecute", TaintEffect::kNoExecute}};
  return names;
}

std::string ToString(TaintEffect value) {
  return NameOf(TaintEffectNames(), value);
}

const EnumNames<UnhealthyDevices>& UnhealthyDevicesNames() {
  static const EnumNames<UnhealthyDevices> names = {
      {"drop", UnhealthyDevices::kDrop}, {"taint", UnhealthyDevices::kTaint}};
  return names;
}

std::string ToString(UnhealthyDevices value) {
  return NameOf(UnhealthyDevicesNames(), value);
}

std::string ToString(MigStrategy value) {
  return NameOf(MigStrategyNames(), value);
}
std::string ToString(DeviceListStrategy value) {
  return NameOf(DeviceListStrategyNames(), value);
}
std::string ToString(DeviceIdStrategy value) {
  return NameOf(DeviceIdStrategyNames(), value);
}
std::string ToString(SharedDevicesAllocationPolicy value) {
  return NameOf(AllocationPolicyNames(), value);
}
std::string ToString(DeviceDiscoveryStrategy value) {
  return NameOf(DeviceDiscoveryStrategyNames(), value);
}

std::string ToString(XidAction value) {
  return NameOf(XidActionNames(), value);
}

std::string Origin::ToString() const {
  if (line <= 0) return source;
  return absl::StrCat(source, ":", line, ":", column);
}

SharingStrategy Sharing::Strategy() const {
  if (mps.has_value()) return SharingStrategy::kMps;
  if (time_slicing.has_value()) return SharingStrategy::kTimeSlicing;
  return SharingStrategy::kNone;
}

const ReplicatedResources* Sharing::Active() const {
  switch (Strategy()) {
    case SharingStrategy::kMps:
      return &*mps;
    case SharingStrategy::kTimeSlicing:
      return &*time_slicing;
    case SharingStrategy::kNone:
      break;
  }
  return nullptr;
}

std::string AdvertisedName(const ReplicatedResources& section,
                           const ReplicatedResource& resource) {
  if (!resource.rename.empty()) return resource.rename;
  if (section.rename_by_default) {
    return absl::StrCat(resource.name, kSharedResourceSuffix);
  }
  return resource.name;
}

}  // namespace gpulet::config
