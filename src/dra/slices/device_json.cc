#include "src/dra/slices/device_json.h"

#include <cstddef>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/dra/kubelet/device_names.h"
#include "src/gpu/device/pci_address.h"

namespace gpulet::draslice {
namespace {

using Json = nlohmann::json;

// The API server refuses string attributes longer than 64 characters.
constexpr size_t kMaxStringValue = 64;

Json String(const std::string& value) {
  return {{"string", value.substr(0, kMaxStringValue)}};
}
Json Int(int64_t value) { return {{"int", value}}; }
Json Quantity(uint64_t value) { return {{"value", BinaryQuantity(value)}}; }

void PutVersion(Json& attributes, const char* name, const std::string& text) {
  if (std::optional<std::string> v = SemverOf(text)) {
    attributes[name] = {{"version", *v}};
  }
}

// What a GPU and its MIG devices share: model, driver, PCI place.
Json CommonAttributes(const device::Gpu& gpu, const DeviceFacts& facts) {
  Json a = Json::object();
  a["productName"] = String(gpu.name);
  a["brand"] = String(gpu.brand);
  a["architecture"] = String(gpu.architecture);
  PutVersion(a, "cudaComputeCapability",
             absl::StrCat(gpu.cc_major, ".", gpu.cc_minor));
  PutVersion(a, "driverVersion", facts.driver_version);
  PutVersion(a, "cudaDriverVersion",
             device::CudaVersionString(facts.cuda_driver_version));
  if (std::string bus = StandardBusId(gpu.bus_id); !bus.empty()) {
    a[kPciBusIdAttribute] = String(bus);
  }
  if (!facts.pcie_root.empty()) a[kPcieRootAttribute] = String(facts.pcie_root);
  if (gpu.numa_node.has_value()) a["numaNode"] = Int(*gpu.numa_node);
  return a;
}

}  // namespace

std::string BinaryQuantity(uint64_t bytes) {
  static constexpr const char* kBinary[] = {"",   "Ki", "Mi", "Gi",
                                            "Ti", "Pi", "Ei"};
  static constexpr const char* kDecimal[] = {"", "k", "M", "G", "T", "P", "E"};
  // A number the API server reads as binary (a multiple of 1024) keeps the
  // largest binary suffix; any other number is decimal and keeps the largest
  // decimal one ("1000" comes back as "1k"). Zero is "0".
  const bool binary = bytes >= 1024 && bytes % 1024 == 0;
  const uint64_t base = binary ? 1024 : 1000;
  size_t suffix = 0;
  while (bytes != 0 && suffix + 1 < std::size(kBinary) && bytes % base == 0) {
    bytes /= base;
    ++suffix;
  }
  return absl::StrCat(bytes, binary ? kBinary[suffix] : kDecimal[suffix]);
}

std::optional<std::string> SemverOf(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, '.');
  if (text.empty() || parts.size() > 3) return std::nullopt;
  std::vector<uint64_t> numbers;
  for (const std::string& part : parts) {
    uint64_t n = 0;
    if (part.empty() || part.find_first_not_of("0123456789") != part.npos ||
        !absl::SimpleAtoi(part, &n)) {
      return std::nullopt;
    }
    numbers.push_back(n);
  }
  numbers.resize(3, 0);
  return absl::StrCat(numbers[0], ".", numbers[1], ".", numbers[2]);
}

std::string StandardBusId(const std::string& bus_id) {
  std::optional<device::PciAddress> address = device::ParsePciAddress(bus_id);
  if (!address.has_value() || address->domain > 0xffff) return "";
  return device::SysfsBusId(*address);
}

Json GpuDeviceJson(const device::Gpu& gpu, const DeviceFacts& facts) {
  Json a = CommonAttributes(gpu, facts);
  a["type"] = String("gpu");
  a["uuid"] = String(gpu.uuid);
  a["index"] = Int(gpu.index);
  a["minor"] = Int(gpu.minor);
  if (facts.nvlink_domain.has_value()) {
    a["nvlinkDomain"] = Int(*facts.nvlink_domain);
  }
  if (gpu.fabric.has_value() && gpu.fabric->Joined() &&
      !gpu.fabric->cluster_uuid.empty()) {
    a["nvlinkClique"] = String(
        absl::StrCat(gpu.fabric->cluster_uuid, ".", gpu.fabric->clique_id));
  }
  return {{"name", dra::GpuDeviceName(static_cast<int>(gpu.index))},
          {"attributes", a},
          {"capacity", {{"memory", Quantity(gpu.memory_total_bytes)}}}};
}

bool ShareableByMemory(Json& device, uint64_t memory_bytes, uint64_t step) {
  // The API wants min + step <= value, max and default multiples of step.
  if (step == 0 || memory_bytes / step < 2) return false;
  const std::string largest = BinaryQuantity(memory_bytes / step * step);
  device["allowMultipleAllocations"] = true;
  device["capacity"]["memory"]["requestPolicy"] = {
      {"default", largest},
      {"validRange",
       {{"min", BinaryQuantity(step)},
        {"max", largest},
        {"step", BinaryQuantity(step)}}}};
  return true;
}

Json MigDeviceJson(const device::Gpu& parent, const device::MigDevice& mig,
                   const DeviceFacts& facts) {
  Json a = CommonAttributes(parent, facts);
  a["type"] = String("mig");
  a["uuid"] = String(mig.uuid);
  a["parentUUID"] = String(parent.uuid);
  a["parentIndex"] = Int(parent.index);
  a["parentMinor"] = Int(parent.minor);
  a["index"] = Int(mig.mig_index);
  a["profile"] = String(mig.profile);
  const device::GiPlacement& placement = *mig.gi_placement;
  a["giProfileId"] = Int(placement.profile_id);
  a["placementStart"] = Int(placement.start);
  a["placementSize"] = Int(placement.size);
  Json capacity = {
      {"memory", Quantity(mig.memory_bytes)},
      {"multiprocessors", Quantity(mig.multiprocessor_count)},
      {"copyEngines", Quantity(mig.copy_engine_count)},
      {"decoders", Quantity(mig.decoder_count)},
      {"encoders", Quantity(mig.encoder_count)},
      {"jpegEngines", Quantity(mig.jpeg_count)},
      {"ofaEngines", Quantity(mig.ofa_count)},
  };
  return {{"name", dra::MigDeviceName(static_cast<int>(parent.index),
                                      static_cast<int>(placement.profile_id),
                                      static_cast<int>(placement.start),
                                      static_cast<int>(placement.size))},
          {"attributes", a},
          {"capacity", capacity}};
}

}  // namespace gpulet::draslice
