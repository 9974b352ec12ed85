#include "sim/machine_parser.h"

#include <exception>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sim/gpu_parser.h"
#include "sim/yaml_fields.h"
#include "src/base/yaml/nesting_depth.h"

namespace gpulet::sim {
namespace {

using parser::ParsedGpu;
using yaml::Ctx;
using yaml::Field;
using yaml::MapView;

constexpr int kMaxNesting = 64;
constexpr char kDefaultDriverVersion[] = "550.54.15";
constexpr int kDefaultCudaVersion = 12040;
// The driver's default NVreg_ImexChannelCount.
constexpr unsigned kMaxImexChannels = 2048;

// "550.54.15": two to four dot-separated numbers.
absl::StatusOr<std::string> ReadVersion(const Ctx& ctx, const Field& field) {
  GPULET_ASSIGN_OR_RETURN(std::string text, yaml::ReadString(ctx, field, 64));
  std::vector<absl::string_view> parts = absl::StrSplit(text, '.');
  bool ok = parts.size() >= 2 && parts.size() <= 4;
  for (absl::string_view part : parts) {
    ok = ok && !part.empty() && part.size() <= 6;
    for (char c : part)
      ok = ok && absl::ascii_isdigit(static_cast<unsigned char>(c));
  }
  if (!ok) {
    return yaml::FieldError(
        ctx, field,
        absl::StrCat("expected a version such as 550.54.15, "
                     "got \"",
                     absl::CHexEscape(text), "\""));
  }
  return text;
}

// 12040, or "12.4" meaning the same.
absl::StatusOr<int> ReadCudaVersion(const Ctx& ctx, const Field& field) {
  if (field.node.IsScalar() &&
      field.node.Scalar().find('.') != std::string::npos) {
    GPULET_ASSIGN_OR_RETURN(std::string text, ReadVersion(ctx, field));
    std::vector<std::string> parts = absl::StrSplit(text, '.');
    int major = 0;
    int minor = 0;
    if (parts.size() == 2 && absl::SimpleAtoi(parts[0], &major) &&
        absl::SimpleAtoi(parts[1], &minor) && major >= 1 && major <= 99 &&
        minor <= 99) {
      return major * 1000 + minor * 10;
    }
    return yaml::FieldError(ctx, field,
                            "expected a CUDA version such as 12.4 or 12040");
  }
  GPULET_ASSIGN_OR_RETURN(uint64_t version,
                          yaml::ReadUint(ctx, field, 1000, 99990));
  return static_cast<int>(version);
}

absl::Status ParseDriver(const Ctx& ctx, const std::optional<Field>& field,
                         Machine* m) {
  m->driver_version = kDefaultDriverVersion;
  m->cuda_driver_version = kDefaultCudaVersion;
  if (field) {
    GPULET_ASSIGN_OR_RETURN(MapView map,
                            MapView::Read(ctx, *field,
                                          {"loaded", "version", "nvmlVersion",
                                           "cudaVersion", "initError"}));
    GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
        map, "loaded", &m->driver_loaded,
        [&](const Field& f) { return yaml::ReadBool(ctx, f); }));
    auto read_version = [&](const Field& f) { return ReadVersion(ctx, f); };
    GPULET_RETURN_IF_ERROR(
        yaml::ReadOptional(map, "version", &m->driver_version, read_version));
    GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
        map, "cudaVersion", &m->cuda_driver_version,
        [&](const Field& f) { return ReadCudaVersion(ctx, f); }));
    // NVML's version is the CUDA major version it ships with, then the
    // driver's: "13.580.82.07".
    m->nvml_version =
        absl::StrCat(m->cuda_driver_version / 1000, ".", m->driver_version);
    GPULET_RETURN_IF_ERROR(
        yaml::ReadOptional(map, "nvmlVersion", &m->nvml_version, read_version));
    if (std::optional<Field> error = map.Find("initError")) {
      if (m->driver_loaded) {
        return yaml::FieldError(ctx, *error,
                                "initError applies only when loaded is false");
      }
      GPULET_ASSIGN_OR_RETURN(
          m->init_error,
          yaml::ReadEnum<nvmlReturn_t>(
              ctx, *error,
              {{"DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED},
               {"NO_PERMISSION", NVML_ERROR_NO_PERMISSION},
               {"LIB_RM_VERSION_MISMATCH", NVML_ERROR_LIB_RM_VERSION_MISMATCH},
               {"LIBRARY_NOT_FOUND", NVML_ERROR_LIBRARY_NOT_FOUND},
               {"UNKNOWN", NVML_ERROR_UNKNOWN}}));
    }
  } else {
    m->nvml_version = absl::StrCat("12.", m->driver_version);
  }
  return absl::OkStatus();
}

// Records `key` -> `path`; an error at `field` when the key was seen before.
absl::Status Claim(const Ctx& ctx, std::map<std::string, std::string>* seen,
                   const std::string& key, const Field& field,
                   absl::string_view what) {
  auto [it, inserted] = seen->emplace(key, field.path);
  if (inserted) return absl::OkStatus();
  return yaml::FieldError(
      ctx, field,
      absl::StrCat("duplicate ", what, " (also at ", it->second, ")"));
}

absl::Status CheckUnique(const Ctx& ctx, const std::vector<ParsedGpu>& gpus) {
  std::map<std::string, std::string> uuids;
  std::map<std::string, std::string> bus_ids;
  std::map<std::string, std::string> minors;
  for (const ParsedGpu& p : gpus) {
    const Gpu& gpu = p.gpu;
    GPULET_RETURN_IF_ERROR(Claim(ctx, &uuids, absl::AsciiStrToLower(gpu.uuid),
                                 p.uuid, "UUID " + gpu.uuid));
    GPULET_RETURN_IF_ERROR(
        Claim(ctx, &bus_ids, gpu.bus_id, p.bus_id, "PCI bus ID " + gpu.bus_id));
    // A GPU on another driver has no /dev/nvidia<minor>.
    if (gpu.bound_driver == "nvidia") {
      Field minor_field = p.minor.value_or(p.self);
      GPULET_RETURN_IF_ERROR(Claim(
          ctx, &minors, absl::StrCat(gpu.minor), minor_field,
          absl::StrCat("minor number ", gpu.minor,
                       p.minor ? "" : " (defaulted to the GPU's index)")));
    }
    for (size_t i = 0; i < gpu.mig_devices.size(); ++i) {
      const std::string& uuid = gpu.mig_devices[i].uuid;
      GPULET_RETURN_IF_ERROR(Claim(ctx, &uuids, absl::AsciiStrToLower(uuid),
                                   p.mig_uuids[i], "UUID " + uuid));
    }
  }
  return absl::OkStatus();
}

// Fills remote bus IDs of GPU peers and checks that every GPU-to-GPU link
// is listed on both ends and that no switch claims a GPU's bus ID.
absl::Status ResolveLinks(const Ctx& ctx, std::vector<ParsedGpu>* gpus) {
  const size_t n = gpus->size();
  std::map<std::string, size_t> gpu_by_bus;
  for (size_t i = 0; i < n; ++i) gpu_by_bus[(*gpus)[i].gpu.bus_id] = i;
  // counts[i][j] = {links, active links} from GPU i to GPU j.
  std::vector<std::vector<std::pair<int, int>>> counts(
      n, std::vector<std::pair<int, int>>(n, {0, 0}));
  for (size_t i = 0; i < n; ++i) {
    ParsedGpu& p = (*gpus)[i];
    for (size_t k = 0; k < p.gpu.nvlinks.size(); ++k) {
      NvLink& link = p.gpu.nvlinks[k];
      if (link.remote_type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
        auto clash = gpu_by_bus.find(link.remote_bus_id);
        if (clash != gpu_by_bus.end()) {
          return yaml::FieldError(
              ctx, p.switch_bus_ids[k],
              absl::StrCat("NVSwitch bus ID ", link.remote_bus_id, " is GPU ",
                           clash->second, "'s bus ID"));
        }
        continue;
      }
      link.remote_bus_id = (*gpus)[link.peer_gpu].gpu.bus_id;
      counts[i][link.peer_gpu].first++;
      if (link.active) counts[i][link.peer_gpu].second++;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (counts[i][j] == counts[j][i]) continue;
      size_t from = counts[i][j].first > 0 ? i : j;
      size_t to = from == i ? j : i;
      const ParsedGpu& p = (*gpus)[from];
      size_t k = 0;
      while (p.gpu.nvlinks[k].peer_gpu != static_cast<int>(to)) ++k;
      return yaml::FieldError(
          ctx, p.links[k],
          absl::StrCat("GPU ", from, " has ", counts[from][to].first,
                       " NVLinks (", counts[from][to].second,
                       " active) to GPU ", to, ", but GPU ", to, " has ",
                       counts[to][from].first, " (", counts[to][from].second,
                       " active) back; list each link on both GPUs"));
    }
  }
  return absl::OkStatus();
}

// GPUs bound to another driver than nvidia leave NVML's list (and the
// topology matrix); NVLink peers were checked to stay on one side, so the
// remaining peers' indices only shift down.
void HideHostGpus(Machine* m) {
  std::vector<int> new_index(m->gpus.size(), -1);
  std::vector<Gpu> visible;
  for (size_t i = 0; i < m->gpus.size(); ++i) {
    if (m->gpus[i].bound_driver == "nvidia") {
      new_index[i] = static_cast<int>(visible.size());
      visible.push_back(std::move(m->gpus[i]));
    } else {
      m->host_gpus.push_back(std::move(m->gpus[i]));
    }
  }
  if (m->host_gpus.empty()) {
    m->gpus = std::move(visible);
    return;
  }
  std::vector<std::vector<nvmlGpuTopologyLevel_t>> topology;
  for (size_t i = 0; i < new_index.size(); ++i) {
    if (new_index[i] < 0) continue;
    std::vector<nvmlGpuTopologyLevel_t> row;
    for (size_t j = 0; j < new_index.size(); ++j) {
      if (new_index[j] >= 0) row.push_back(m->topology[i][j]);
    }
    topology.push_back(std::move(row));
  }
  for (Gpu& gpu : visible) {
    for (NvLink& link : gpu.nvlinks) {
      if (link.peer_gpu >= 0) {
        link.peer_gpu = new_index[static_cast<size_t>(link.peer_gpu)];
      }
    }
  }
  m->gpus = std::move(visible);
  m->topology = std::move(topology);
}

absl::StatusOr<Machine> ParseRoot(const Ctx& ctx, const YAML::Node& root) {
  Field root_field{root, ""};
  if (!root.IsMap()) {
    return yaml::FieldError(ctx, root_field,
                            "expected a map with driver, gpus and topology");
  }
  GPULET_ASSIGN_OR_RETURN(
      MapView map,
      MapView::Read(ctx, root_field,
                    {"description", "productName", "driver", "imexChannels",
                     "gpuDefaults", "gpus", "topology", "iommufd"}));
  Machine m;
  m.source = ctx.source;
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "description", &m.description,
      [&](const Field& f) { return yaml::ReadString(ctx, f, 200); }));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "productName", &m.product_name,
      [&](const Field& f) { return yaml::ReadString(ctx, f, 100); }));
  GPULET_RETURN_IF_ERROR(ParseDriver(ctx, map.Find("driver"), &m));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "imexChannels", &m.imex_channels, [&](const Field& f) {
        return yaml::ReadUint(ctx, f, 0, kMaxImexChannels);
      }));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "iommufd", &m.iommufd,
      [&](const Field& f) { return yaml::ReadBool(ctx, f); }));
  std::optional<MapView> defaults;
  if (std::optional<Field> field = map.Find("gpuDefaults")) {
    GPULET_ASSIGN_OR_RETURN(
        defaults, MapView::Read(ctx, *field, parser::GpuDefaultKeys()));
  }
  GPULET_ASSIGN_OR_RETURN(Field gpus_field, map.Require("gpus"));
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          yaml::ReadList(ctx, gpus_field, parser::kMaxGpus));
  std::vector<ParsedGpu> gpus;
  for (size_t i = 0; i < items.size(); ++i) {
    GPULET_ASSIGN_OR_RETURN(
        ParsedGpu gpu,
        parser::ParseGpu(ctx, items[i], defaults ? &*defaults : nullptr, i,
                         items.size()));
    gpus.push_back(std::move(gpu));
  }
  // The driver numbers only the GPUs it binds.
  unsigned nvidia_bound = 0;
  for (ParsedGpu& p : gpus) {
    if (p.gpu.bound_driver != "nvidia") continue;
    if (!p.minor) p.gpu.minor = nvidia_bound;
    ++nvidia_bound;
  }
  GPULET_RETURN_IF_ERROR(CheckUnique(ctx, gpus));
  GPULET_RETURN_IF_ERROR(ResolveLinks(ctx, &gpus));
  GPULET_RETURN_IF_ERROR(parser::CheckPassthrough(ctx, gpus));
  for (ParsedGpu& p : gpus) m.gpus.push_back(std::move(p.gpu));
  GPULET_ASSIGN_OR_RETURN(
      m.topology, parser::ParseTopology(ctx, map.Find("topology"), m.gpus));
  HideHostGpus(&m);
  return m;
}

}  // namespace

absl::StatusOr<Machine> ParseMachine(const std::string& yaml,
                                     const std::string& source) {
  Ctx ctx{source};
  if (yaml.size() > kMaxMachineFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": machine file is ", yaml.size(),
                     " bytes; the limit is ", kMaxMachineFileBytes));
  }
  GPULET_RETURN_IF_ERROR(
      ::gpulet::yaml::CheckNestingDepth(yaml, kMaxNesting, ctx.source));
  try {
    YAML::Node root;
    try {
      root = YAML::Load(yaml);
    } catch (const YAML::Exception& e) {
      return yaml::ErrorAt(ctx, e.mark, "",
                           absl::StrCat("invalid YAML: ", e.msg));
    }
    return ParseRoot(ctx, root);
  } catch (const std::exception& e) {
    // Only a yaml-cpp bug gets here; report it rather than crash the caller.
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": cannot read machine file: ", e.what()));
  } catch (...) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": cannot read machine file"));
  }
}

}  // namespace gpulet::sim
