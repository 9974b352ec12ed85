// What a ResourceClaim (resource.k8s.io/v1 JSON, as the API server returns
// it) allocated to this driver on this node: the devices of the claim's
// allocation results whose driver is ours and whose pool is the node's, and
// the opaque configuration meant for our driver.
//
// Pure: JSON in, values out. Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace gpulet::dra {

// A claim as the kubelet names it in NodePrepareResources.
struct ClaimRef {
  std::string namespace_name;
  std::string name;
  std::string uid;

  bool operator==(const ClaimRef&) const = default;
};

// One allocated device. Several results for the same device (and share)
// merge into one entry listing every request it serves, in result order.
struct AllocatedDevice {
  std::string device;  // the DRA device name, "gpu-0"
  std::string pool;
  std::vector<std::string> requests;
  std::optional<std::string> share_id;
  // consumedCapacity.memory in bytes: the share of a GPU published
  // shareable by memory (DRAConsumableCapacity); unset for a whole device.
  std::optional<int64_t> consumed_memory;
  bool admin_access = false;

  bool operator==(const AllocatedDevice&) const = default;
};

// One opaque configuration for our driver, in the order the allocation
// lists them (class configuration first, then the claim's). `requests`
// empty means every request of the claim.
struct OpaqueConfig {
  std::vector<std::string> requests;
  nlohmann::json parameters;
  bool from_class = false;

  bool operator==(const OpaqueConfig&) const = default;
};

struct ClaimAllocation {
  std::vector<AllocatedDevice> devices;
  std::vector<OpaqueConfig> configs;
};

// Reads `claim`. Errors (InvalidArgument, the message names the claim as
// "<namespace>/<name>" and the field): the object's metadata.uid differs
// from ref.uid (the claim was deleted and recreated), the claim is not
// allocated, a field has the wrong type, a result of ours names no device,
// or its consumedCapacity.memory is not a quantity.
// A claim whose allocation has no device of ours on this node yields an
// empty device list: the caller decides whether that is an error.
absl::StatusOr<ClaimAllocation> ReadAllocation(const nlohmann::json& claim,
                                               const ClaimRef& ref,
                                               const std::string& driver,
                                               const std::string& pool);

// "<namespace>/<name>" for messages.
std::string ClaimName(const ClaimRef& ref);

}  // namespace gpulet::dra
