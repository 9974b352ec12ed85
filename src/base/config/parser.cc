// ParseConfig: the root, flags.* and the shared map-dispatch helpers.
// Resources, sharing and imex live in parser_sharing.cc, health and metrics
// in parser_health.cc.
#include "src/base/config/parser.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/file_util.h"
#include "src/base/config/names.h"
#include "src/base/config/parser_sections.h"
#include "src/base/config/validate.h"
#include "src/base/yaml/nesting_depth.h"

namespace gpulet::config {
namespace internal {
namespace {

// A config file needs seven levels (sharing.mps.resources[0].devices[0]).
constexpr int kMaxNesting = 32;
constexpr size_t kMaxStrategies = 16;
constexpr size_t kMaxFeatureFlags = 64;

Handler Ignored(ParseContext& ctx, bool is_bool) {
  return [&ctx, is_bool](const Field& f) -> absl::Status {
    absl::Status s =
        is_bool ? ctx.reader.Bool(f).status() : ctx.reader.String(f).status();
    if (s.ok()) ctx.config->ignored_keys.push_back(f.path);
    return s;
  };
}

// A single name or a list of names, as NVIDIA's deviceListStrategyFlag.
absl::Status ReadDeviceListStrategy(ParseContext& ctx, const Field& f,
                                    std::vector<DeviceListStrategy>* out) {
  std::vector<Field> items;
  if (f.node.IsSequence()) {
    GPULET_ASSIGN_OR_RETURN(items, ctx.reader.List(f, kMaxStrategies));
  } else {
    items.push_back(f);
  }
  out->clear();
  for (const Field& item : items) {
    ctx.reader.Record(item);
    GPULET_ASSIGN_OR_RETURN(DeviceListStrategy s,
                            ctx.reader.Enum(item, DeviceListStrategyNames()));
    if (std::find(out->begin(), out->end(), s) == out->end()) {
      out->push_back(s);
    }
  }
  return absl::OkStatus();
}

// NVIDIA's flag is a string slice; its file key is a string. Both read.
absl::Status ReadStringOrList(ParseContext& ctx, const Field& f,
                              std::vector<std::string>* out) {
  out->clear();
  if (!f.node.IsSequence()) {
    GPULET_ASSIGN_OR_RETURN(std::string s, ctx.reader.String(f));
    out->push_back(std::move(s));
    return absl::OkStatus();
  }
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          ctx.reader.List(f, kMaxFeatureFlags));
  for (const Field& item : items) {
    GPULET_ASSIGN_OR_RETURN(std::string s, ctx.reader.String(item));
    out->push_back(std::move(s));
  }
  return absl::OkStatus();
}

absl::Status ParsePluginFlags(ParseContext& ctx, const Field& field) {
  PluginFlags& p = ctx.config->flags.plugin;
  return ReadMap(
      ctx, field,
      {{"passDeviceSpecs", SetBool(ctx, &p.pass_device_specs)},
       {"deviceListStrategy",
        [&](const Field& f) {
          return ReadDeviceListStrategy(ctx, f, &p.device_list_strategy);
        }},
       {"deviceIDStrategy",
        SetEnum(ctx, &p.device_id_strategy, DeviceIdStrategyNames())},
       {"cdiAnnotationPrefix", SetString(ctx, &p.cdi_annotation_prefix)},
       {"nvidiaCTKPath", SetString(ctx, &p.nvidia_ctk_path)},
       {"containerDriverRoot", SetString(ctx, &p.container_driver_root)},
       {"sharedDevicesAllocationPolicy",
        SetEnum(ctx, &p.shared_devices_allocation_policy,
                AllocationPolicyNames())},
       {"kubeletSocket", SetString(ctx, &p.kubelet_socket)},
       {"cdiFeatureFlags", [&](const Field& f) {
          return ReadStringOrList(ctx, f, &p.cdi_feature_flags);
        }}});
}

// flags.gfd.*: GPU feature discovery reads these from the shared file.
absl::Status ParseGfdFlags(ParseContext& ctx, const Field& field) {
  return ReadMap(ctx, field,
                 {{"oneshot", IgnoredBool(ctx)},
                  {"noTimestamp", IgnoredBool(ctx)},
                  {"sleepInterval", IgnoredString(ctx)},
                  {"outputFile", IgnoredString(ctx)},
                  {"machineTypeFile", IgnoredString(ctx)}});
}

absl::Status ParseRoot(ParseContext& ctx, const YAML::Node& root) {
  Field field{root, ""};
  if (root.IsScalar() && root.Scalar().empty()) return absl::OkStatus();
  if (!root.IsNull() && !root.IsMap()) {
    return ctx.reader.Error(
        Field{root, "(top level)"},
        absl::StrCat("expected a map with version, flags, resources, "
                     "sharing, imex, health, metrics, passthrough, dra; got ",
                     yaml::Describe(root)));
  }
  return ReadMap(
      ctx, field,
      {{"version", SetString(ctx, &ctx.config->version)},
       {"flags", [&](const Field& f) { return ParseFlags(ctx, f); }},
       {"resources", [&](const Field& f) { return ParseResources(ctx, f); }},
       {"sharing", [&](const Field& f) { return ParseSharing(ctx, f); }},
       {"imex", [&](const Field& f) { return ParseImex(ctx, f); }},
       {"health", [&](const Field& f) { return ParseHealth(ctx, f); }},
       {"metrics", [&](const Field& f) { return ParseMetrics(ctx, f); }},
       {"passthrough",
        [&](const Field& f) { return ParsePassthrough(ctx, f); }},
       {"dra", [&](const Field& f) { return ParseDra(ctx, f); }}});
}

}  // namespace

absl::Status ReadMap(ParseContext& ctx, const Field& field,
                     const Handlers& handlers) {
  std::vector<std::string> allowed;
  allowed.reserve(handlers.size());
  for (const auto& [key, handler] : handlers) allowed.push_back(key);
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> entries,
                          ctx.reader.Map(field, allowed));
  for (const Field& entry : entries) {
    ctx.reader.Record(entry);
    for (const auto& [key, handler] : handlers) {
      if (JoinPath(field.path, key) == entry.path) {
        GPULET_RETURN_IF_ERROR(handler(entry));
        break;
      }
    }
  }
  return absl::OkStatus();
}

Handler SetBool(ParseContext& ctx, bool* out) {
  return [&ctx, out](const Field& f) -> absl::Status {
    GPULET_ASSIGN_OR_RETURN(*out, ctx.reader.Bool(f));
    return absl::OkStatus();
  };
}

Handler SetString(ParseContext& ctx, std::string* out) {
  return [&ctx, out](const Field& f) -> absl::Status {
    GPULET_ASSIGN_OR_RETURN(*out, ctx.reader.String(f));
    return absl::OkStatus();
  };
}

Handler IgnoredBool(ParseContext& ctx) { return Ignored(ctx, true); }
Handler IgnoredString(ParseContext& ctx) { return Ignored(ctx, false); }

absl::StatusOr<std::string> ReadResourceName(ParseContext& ctx,
                                             const Field& field) {
  GPULET_ASSIGN_OR_RETURN(std::string name, ctx.reader.String(field, 256));
  absl::StatusOr<std::string> full = QualifyResourceName(name);
  if (!full.ok()) return ctx.reader.Error(field, full.status().message());
  return full;
}

absl::Status ParseFlags(ParseContext& ctx, const Field& field) {
  Flags& f = ctx.config->flags;
  return ReadMap(
      ctx, field,
      {{"migStrategy", SetEnum(ctx, &f.mig_strategy, MigStrategyNames())},
       {"failOnInitError", SetBool(ctx, &f.fail_on_init_error)},
       {"mpsRoot", SetString(ctx, &f.mps_root)},
       {"nvidiaDriverRoot", SetString(ctx, &f.nvidia_driver_root)},
       {"nvidiaDevRoot", SetString(ctx, &f.nvidia_dev_root)},
       {"gdrcopyEnabled", SetBool(ctx, &f.gdrcopy_enabled)},
       {"gdsEnabled", SetBool(ctx, &f.gds_enabled)},
       {"mofedEnabled", SetBool(ctx, &f.mofed_enabled)},
       {"deviceDiscoveryStrategy", SetEnum(ctx, &f.device_discovery_strategy,
                                           DeviceDiscoveryStrategyNames())},
       {"useNodeFeatureAPI", IgnoredBool(ctx)},
       {"plugin", [&](const Field& p) { return ParsePluginFlags(ctx, p); }},
       {"gfd", [&](const Field& g) { return ParseGfdFlags(ctx, g); }}});
}

}  // namespace internal

absl::StatusOr<Config> ParseConfig(const std::string& yaml,
                                   const std::string& source) {
  if (yaml.size() > kMaxConfigFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": config file is ", yaml.size(),
                     " bytes; the limit is ", kMaxConfigFileBytes));
  }
  GPULET_RETURN_IF_ERROR(
      yaml::CheckNestingDepth(yaml, internal::kMaxNesting, source));
  Config config;
  try {
    YAML::Node root;
    try {
      root = YAML::Load(yaml);
    } catch (const YAML::Exception& e) {
      std::string where = source;
      if (!e.mark.is_null()) {
        absl::StrAppend(&where, ":", e.mark.line + 1, ":", e.mark.column + 1);
      }
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": invalid YAML: ", e.msg));
    }
    internal::ParseContext ctx{internal::YamlReader(source, &config.origins),
                               &config};
    GPULET_RETURN_IF_ERROR(internal::ParseRoot(ctx, root));
  } catch (const std::exception& e) {
    // Only a yaml-cpp bug gets here; report it rather than crash the caller.
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": cannot read config file: ", e.what()));
  } catch (...) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": cannot read config file"));
  }
  GPULET_RETURN_IF_ERROR(ValidateValues(config));
  return config;
}

absl::StatusOr<Config> LoadConfigFile(const std::string& path) {
  // Refuse a huge file before reading it; ParseConfig checks again.
  std::error_code ec;
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxConfigFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": config file is ", size, " bytes; the limit is ",
                     kMaxConfigFileBytes));
  }
  absl::StatusOr<std::string> text = common::ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseConfig(*text, path);
}

}  // namespace gpulet::config
