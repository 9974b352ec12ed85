// The per-GPU part of the machine parser: one entry of `gpus:` (merged with
// `gpuDefaults:`) becomes a sim::Gpu, with the positions of the values that
// later cross-GPU checks (duplicate IDs, NVLink symmetry) must point at.
// Also the topology section, which needs every GPU first.
//
// Internal to gpulet_sim_model; pure functions over their arguments.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/gpu_models.h"
#include "sim/machine.h"
#include "sim/yaml_fields.h"

namespace gpulet::sim::parser {

inline constexpr size_t kMaxGpus = 64;
inline constexpr unsigned kMaxCpu = 4095;

struct ParsedGpu {
  Gpu gpu;
  yaml::Field self;
  yaml::Field uuid;
  yaml::Field bus_id;
  std::optional<yaml::Field> minor;         // absent: defaulted to the index
  std::vector<yaml::Field> links;           // one per entry of gpu.nvlinks
  std::vector<yaml::Field> switch_bus_ids;  // parallel to links; unset path
                                            // for GPU peers
  std::vector<yaml::Field> mig_uuids;       // one per MIG device
  std::optional<yaml::Field> iommu_group;   // absent: defaulted to the index
  std::optional<yaml::Field> functions;
  std::vector<yaml::Field> mdev_uuids;  // one per mdev
};

// Keys allowed in a GPU entry and in gpuDefaults.
const std::vector<std::string>& GpuKeys();
const std::vector<std::string>& GpuDefaultKeys();

// Parses gpus[index]. `defaults` may be null. `gpu_count` bounds NVLink peers.
absl::StatusOr<ParsedGpu> ParseGpu(const yaml::Ctx& ctx,
                                   const yaml::Field& field,
                                   const yaml::MapView* defaults, size_t index,
                                   size_t gpu_count);

// The `mig:` section of one GPU (mig_parser.cc). `model` may be null.
absl::Status ParseMig(const yaml::Ctx& ctx, const yaml::MapView& gpu_map,
                      const GpuModel* model, ParsedGpu* out);

// The passthrough keys of one GPU (passthrough_parser.cc): boundDriver,
// iommuGroup, functions, mdevTypes, mdevs.
const std::vector<std::string>& PassthroughKeys();
absl::Status ParsePassthrough(const yaml::Ctx& ctx,
                              const yaml::MapView& gpu_map, ParsedGpu* out);

// Checks across GPUs: PCI addresses of GPUs and their functions and mdev
// UUIDs unique; no NVLink between a GPU NVML enumerates and one bound to
// another driver (NVML would not see that peer).
absl::Status CheckPassthrough(const yaml::Ctx& ctx,
                              const std::vector<ParsedGpu>& gpus);

// The `fabric:` section of one GPU (fabric_parser.cc).
absl::Status ParseFabric(const yaml::Ctx& ctx, const yaml::MapView& gpu_map,
                         Gpu* gpu);

// `mig.giProfiles` and `mig.ciProfiles`, replacing the model's tables when
// present (mig_tables.cc).
absl::Status ParseMigTables(const yaml::Ctx& ctx, const yaml::MapView& mig_map,
                            Gpu* gpu);

// "0000:07:00.0" or "00000000:07:00.0" -> "00000000:07:00.0" (upper case).
absl::StatusOr<std::string> ParseBusId(const yaml::Ctx& ctx,
                                       const yaml::Field& field);

// "<prefix>-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" with hex digits.
absl::StatusOr<std::string> ParseUuid(const yaml::Ctx& ctx,
                                      const yaml::Field& field,
                                      absl::string_view prefix);

// The `topology:` section (topology_parser.cc); absent means NODE within a
// NUMA node and SYS across.
absl::StatusOr<std::vector<std::vector<nvmlGpuTopologyLevel_t>>> ParseTopology(
    const yaml::Ctx& ctx, const std::optional<yaml::Field>& field,
    const std::vector<Gpu>& gpus);

}  // namespace gpulet::sim::parser
