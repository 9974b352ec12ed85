// One device of the node's DRA pool as resource.k8s.io/v1 JSON: a whole GPU
// or a MIG device, with the attributes and capacities a claim selects on
// (docs/dra.md#attributes). Also the value spellings the API server keeps
// unchanged: quantities in canonical binary form, versions as semver.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "nlohmann/json.hpp"
#include "src/gpu/device/gpu.h"

namespace gpulet::draslice {

// Standard attribute names, as in Kubernetes'
// k8s.io/dynamic-resource-allocation/deviceattribute.
inline constexpr char kPciBusIdAttribute[] = "resource.kubernetes.io/pciBusID";
inline constexpr char kPcieRootAttribute[] = "resource.kubernetes.io/pcieRoot";

// What a device's JSON needs besides the device model.
struct DeviceFacts {
  std::string driver_version;        // the node's, "550.54.15"
  int cuda_driver_version = 0;       // 12040
  std::optional<int> nvlink_domain;  // the GPU's NVLink island, if linked
  std::string pcie_root;             // "pci0000:00"; "" when unknown
};

// `bytes` as the API server prints the quantity back, so what is published
// compares equal to what is stored: a multiple of 1024 with the largest
// binary suffix that divides it ("80Gi", "9984Mi"), anything else with the
// largest decimal one ("14", "1k", "85899345921").
std::string BinaryQuantity(uint64_t bytes);

// "550.54.15" -> "550.54.15", "535.104.05" -> "535.104.5", "12.4" ->
// "12.4.0": the numeric parts as semver (leading zeros dropped, missing
// parts 0, at most three). nullopt when `text` is not dot-separated numbers.
std::optional<std::string> SemverOf(const std::string& text);

// "0000:18:00.0" (sysfs's form) for any spelling; "" when unparseable.
std::string StandardBusId(const std::string& bus_id);

// A whole GPU: {"name": "gpu-<index>", "attributes": {...}, "capacity":
// {"memory": ...}}.
nlohmann::json GpuDeviceJson(const device::Gpu& gpu, const DeviceFacts& facts);

// Makes the whole-GPU `device` (GpuDeviceJson) shareable by memory
// (DRAConsumableCapacity): allowMultipleAllocations, and a request policy on
// its `memory` capacity of `step` to the largest multiple of `step` the GPU
// has, in steps of `step`. A request without a memory amount consumes that
// largest multiple, so a claim that does not ask for a share still gets the
// GPU to itself. False, and `device` unchanged, when the GPU has less than
// two steps of memory (nothing to share) or `step` is 0.
bool ShareableByMemory(nlohmann::json& device, uint64_t memory_bytes,
                       uint64_t step);

// A MIG device of `parent`: name from dra::MigDeviceName, attributes of the
// parent plus the MIG device's own, capacities memory, multiprocessors and
// the engines. REQUIRES: mig.gi_placement is set.
nlohmann::json MigDeviceJson(const device::Gpu& parent,
                             const device::MigDevice& mig,
                             const DeviceFacts& facts);

}  // namespace gpulet::draslice
