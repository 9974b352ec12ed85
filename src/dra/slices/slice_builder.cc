#include "src/dra/slices/slice_builder.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/dra/slices/device_json.h"
#include "src/net/kube/api_path.h"

namespace gpulet::draslice {
namespace {

using Json = nlohmann::json;

struct Built {
  std::vector<Json> counter_sets;
  std::vector<Json> devices;
  bool advanced = false;  // a device with taints or counters
};

bool Unhealthy(const NodeDevices& in, const device::Gpu& gpu) {
  const std::string name = dra::GpuDeviceName(static_cast<int>(gpu.index));
  return !gpu.failure.empty() || in.unhealthy.contains(name);
}

DeviceFacts FactsOf(const NodeDevices& in, size_t position) {
  DeviceFacts facts;
  facts.driver_version = in.node.driver_version;
  facts.cuda_driver_version = in.node.cuda_driver_version;
  if (position < in.nvlink_domains.size()) {
    facts.nvlink_domain = in.nvlink_domains[position];
  }
  if (position < in.pcie_roots.size()) {
    facts.pcie_root = in.pcie_roots[position];
  }
  return facts;
}

std::string CounterSetName(const device::Gpu& gpu) {
  return dra::GpuDeviceName(static_cast<int>(gpu.index)) + "-counters";
}

std::string MemorySliceCounter(unsigned k) {
  return absl::StrCat("memory-slice-", k);
}

// The counter set of a MIG-enabled GPU: its memory and each memory slice
// its MIG devices' GPU instances are placed on.
Json CounterSet(const device::Gpu& gpu) {
  uint64_t mig_memory = 0;
  Json counters = Json::object();
  for (const device::MigDevice& mig : gpu.mig_devices) {
    mig_memory += mig.memory_bytes;
    if (!mig.gi_placement.has_value()) continue;
    for (unsigned k = 0; k < mig.gi_placement->size; ++k) {
      counters[MemorySliceCounter(mig.gi_placement->start + k)] = {
          {"value", "1"}};
    }
  }
  counters["memory"] = {
      {"value", BinaryQuantity(std::max(gpu.memory_total_bytes, mig_memory))}};
  return {{"name", CounterSetName(gpu)}, {"counters", counters}};
}

Json Consumption(const device::Gpu& gpu, const device::MigDevice& mig) {
  Json counters = {{"memory", {{"value", BinaryQuantity(mig.memory_bytes)}}}};
  for (unsigned k = 0; k < mig.gi_placement->size; ++k) {
    counters[MemorySliceCounter(mig.gi_placement->start + k)] = {
        {"value", "1"}};
  }
  return Json::array(
      {{{"counterSet", CounterSetName(gpu)}, {"counters", counters}}});
}

// Adds `device`, or taints it, or leaves it out, by health.
void Add(Built& built, Json device, bool unhealthy, bool taint) {
  if (unhealthy && !taint) return;
  if (unhealthy) {
    device["taints"] =
        Json::array({{{"key", kUnhealthyTaintKey}, {"effect", "NoSchedule"}}});
    built.advanced = true;
  }
  built.devices.push_back(std::move(device));
}

Built BuildDevices(const NodeDevices& in, const SliceOptions& options) {
  Built built;
  for (size_t i = 0; i < in.node.gpus.size(); ++i) {
    const device::Gpu& gpu = in.node.gpus[i];
    const DeviceFacts facts = FactsOf(in, i);
    const bool gpu_unhealthy = Unhealthy(in, gpu);
    if (!gpu.mig_enabled) {
      Json device = GpuDeviceJson(gpu, facts);
      if (options.memory_share_step.has_value()) {
        ShareableByMemory(device, gpu.memory_total_bytes,
                          *options.memory_share_step);
      }
      Add(built, std::move(device), gpu_unhealthy, options.taint_unhealthy);
      continue;
    }
    const bool counters = options.partitionable_mig && !gpu.mig_devices.empty();
    if (counters) built.counter_sets.push_back(CounterSet(gpu));
    for (const device::MigDevice& mig : gpu.mig_devices) {
      if (!mig.gi_placement.has_value()) continue;
      Json device = MigDeviceJson(gpu, mig, facts);
      const bool unhealthy =
          gpu_unhealthy ||
          in.unhealthy.contains(device["name"].get<std::string>());
      if (counters) {
        device["consumesCounters"] = Consumption(gpu, mig);
        built.advanced = true;
      }
      Add(built, std::move(device), unhealthy, options.taint_unhealthy);
    }
  }
  return built;
}

absl::Status CheckUniqueNames(const Built& built) {
  std::set<std::string> names;
  for (const Json& device : built.devices) {
    const std::string name = device["name"].get<std::string>();
    if (!names.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", name,
                       ": two devices of the pool have this "
                       "name (duplicate GPU index or MIG placement)"));
    }
  }
  return absl::OkStatus();
}

template <typename T>
std::vector<std::vector<T>> Chunks(const std::vector<T>& items, size_t size) {
  std::vector<std::vector<T>> chunks;
  for (size_t i = 0; i < items.size(); i += size) {
    chunks.emplace_back(items.begin() + static_cast<std::ptrdiff_t>(i),
                        items.begin() + static_cast<std::ptrdiff_t>(
                                            std::min(items.size(), i + size)));
  }
  return chunks;
}

}  // namespace

std::string SliceName(const std::string& node_name, const std::string& driver,
                      size_t k) {
  const std::string suffix = absl::StrCat("-", driver, "-", k);
  std::string name = node_name + suffix;
  if (name.size() <= 253) return name;
  // Keep the name unique per node: a hash of the whole node name replaces
  // what does not fit.
  const std::string hash = absl::StrFormat(
      "%016x", static_cast<uint64_t>(std::hash<std::string>{}(node_name)));
  std::string head = node_name.substr(0, 253 - suffix.size() - hash.size() - 1);
  while (!head.empty() && (head.back() == '-' || head.back() == '.')) {
    head.pop_back();
  }
  return absl::StrCat(head, "-", hash, suffix);
}

absl::StatusOr<std::vector<Json>> BuildSlices(const NodeDevices& devices,
                                              const SliceOptions& options,
                                              int64_t generation) {
  if (absl::Status s = kube::ValidateName("node name", options.node_name);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = kube::ValidateName("driver", options.driver);
      !s.ok() || options.driver.size() > 63) {
    return absl::InvalidArgumentError(
        absl::StrCat("driver ", options.driver,
                     ": not a DNS subdomain of at most 63 characters"));
  }
  if (options.memory_share_step.has_value() &&
      *options.memory_share_step == 0) {
    return absl::InvalidArgumentError(
        "memory share step: must be at least one byte");
  }
  if (generation < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pool generation ", generation, ": must not be negative"));
  }
  const Built built = BuildDevices(devices, options);
  if (absl::Status s = CheckUniqueNames(built); !s.ok()) return s;

  std::vector<Json> specs;
  for (std::vector<Json>& sets :
       Chunks(built.counter_sets, kMaxCounterSetsPerSlice)) {
    specs.push_back({{"sharedCounters", std::move(sets)}});
  }
  const size_t per_slice =
      built.advanced ? kMaxAdvancedDevicesPerSlice : kMaxDevicesPerSlice;
  for (std::vector<Json>& chunk : Chunks(built.devices, per_slice)) {
    specs.push_back({{"devices", std::move(chunk)}});
  }
  if (specs.empty()) specs.push_back({{"devices", Json::array()}});

  std::vector<Json> slices;
  for (size_t k = 0; k < specs.size(); ++k) {
    Json spec = std::move(specs[k]);
    spec["driver"] = options.driver;
    spec["nodeName"] = options.node_name;
    spec["pool"] = {{"name", options.node_name},
                    {"generation", generation},
                    {"resourceSliceCount", specs.size()}};
    Json metadata = {{"name", SliceName(options.node_name, options.driver, k)}};
    if (!options.node_uid.empty()) {
      metadata["ownerReferences"] = Json::array({{{"apiVersion", "v1"},
                                                  {"kind", "Node"},
                                                  {"name", options.node_name},
                                                  {"uid", options.node_uid},
                                                  {"controller", true}}});
    }
    slices.push_back({{"apiVersion", "resource.k8s.io/v1"},
                      {"kind", "ResourceSlice"},
                      {"metadata", std::move(metadata)},
                      {"spec", std::move(spec)}});
  }
  return slices;
}

}  // namespace gpulet::draslice
