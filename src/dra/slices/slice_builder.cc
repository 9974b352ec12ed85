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
  size_t withheld = 0;    // unhealthy devices left out
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

// The fault of device `name`, else of its GPU `gpu_name`; none known: {}.
dra::DeviceFault FaultOf(const NodeDevices& in, const std::string& name,
                         const std::string& gpu_name) {
  if (auto it = in.faults.find(name); it != in.faults.end()) return it->second;
  if (auto it = in.faults.find(gpu_name); it != in.faults.end()) {
    return it->second;
  }
  return {};
}

// Adds `device`, or taints it, or leaves it out, by health.
void Add(Built& built, Json device, const std::optional<dra::DeviceFault>& bad,
         const SliceOptions& options) {
  if (bad.has_value() && !options.taint_unhealthy) {
    ++built.withheld;
    return;
  }
  if (bad.has_value()) {
    device["taints"] = Json::array({UnhealthyTaint(*bad, options)});
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
    const std::string gpu_name =
        dra::GpuDeviceName(static_cast<int>(gpu.index));
    if (!gpu.mig_enabled) {
      Json device = GpuDeviceJson(gpu, facts);
      if (options.memory_share_step.has_value()) {
        ShareableByMemory(device, gpu.memory_total_bytes,
                          *options.memory_share_step);
      }
      std::optional<dra::DeviceFault> bad;
      if (gpu_unhealthy) bad = FaultOf(in, gpu_name, gpu_name);
      Add(built, std::move(device), bad, options);
      continue;
    }
    const bool counters = options.partitionable_mig && !gpu.mig_devices.empty();
    if (counters) built.counter_sets.push_back(CounterSet(gpu));
    for (const device::MigDevice& mig : gpu.mig_devices) {
      if (!mig.gi_placement.has_value()) continue;
      Json device = MigDeviceJson(gpu, mig, facts);
      const std::string name = device["name"].get<std::string>();
      std::optional<dra::DeviceFault> bad;
      if (gpu_unhealthy || in.unhealthy.contains(name)) {
        bad = FaultOf(in, name, gpu_name);
      }
      if (counters) {
        device["consumesCounters"] = Consumption(gpu, mig);
        built.advanced = true;
      }
      Add(built, std::move(device), bad, options);
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

DeviceCounts CountDevices(const NodeDevices& devices,
                          const SliceOptions& options) {
  const Built built = BuildDevices(devices, options);
  DeviceCounts counts;
  counts.withheld = built.withheld;
  for (const Json& device : built.devices) {
    ++(device.contains("taints") ? counts.tainted : counts.healthy);
  }
  return counts;
}

void ApplyUnhealthyDevices(const config::Dra& dra, SliceOptions& options) {
  options.taint_unhealthy =
      dra.unhealthy_devices == config::UnhealthyDevices::kTaint;
  options.unhealthy_effect = dra.unhealthy_effect;
  options.lost_effect = dra.lost_effect;
}

Json UnhealthyTaint(const dra::DeviceFault& fault,
                    const SliceOptions& options) {
  if (fault.lost) {
    return {{"key", kLostTaintKey},
            {"effect", config::ToString(options.lost_effect)}};
  }
  const std::string effect = config::ToString(options.unhealthy_effect);
  if (fault.xid != 0) {
    return {{"key", kXidTaintKey},
            {"value", absl::StrCat(fault.xid)},
            {"effect", effect}};
  }
  return {{"key", kUnhealthyTaintKey}, {"effect", effect}};
}

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
