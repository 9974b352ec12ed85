// ParseConfig's resources.*, sharing.* and imex.* sections.
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "src/base/config/names.h"
#include "src/base/config/parser_sections.h"

namespace gpulet::config::internal {
namespace {

constexpr size_t kMaxResources = 256;
constexpr size_t kMaxDeviceRefs = 1024;
constexpr size_t kMaxChannelIds = 64;

absl::Status Missing(ParseContext& ctx, const Field& parent,
                     const std::string& key) {
  return ctx.reader.Error(Field{parent.node, JoinPath(parent.path, key)},
                          "required key is missing");
}

bool IsPlainInteger(const YAML::Node& node) {
  if (!node.IsScalar() || node.Tag() == "!") return false;  // "!" = quoted
  absl::string_view s = node.Scalar();
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// "all", a count, or a list of device references. List entries are kept
// as written; ValidateValues checks their syntax.
absl::Status ReadDevices(ParseContext& ctx, const Field& f,
                         ReplicaDevices* out) {
  if (f.node.IsSequence()) {
    GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                            ctx.reader.List(f, kMaxDeviceRefs));
    out->kind = ReplicaDevices::Kind::kList;
    for (const Field& item : items) {
      ctx.reader.Record(item);
      GPULET_ASSIGN_OR_RETURN(std::string ref, ctx.reader.String(item, 256));
      out->list.push_back(std::move(ref));
    }
    return absl::OkStatus();
  }
  if (f.node.IsScalar() && f.node.Scalar() == "all") {
    out->kind = ReplicaDevices::Kind::kAll;
    return absl::OkStatus();
  }
  if (IsPlainInteger(f.node)) {
    GPULET_ASSIGN_OR_RETURN(int64_t count, ctx.reader.Int(f));
    out->kind = ReplicaDevices::Kind::kCount;
    out->count = static_cast<int>(count);
    return absl::OkStatus();
  }
  return ctx.reader.Error(
      f, absl::StrCat("expected \"all\", a count, or a list of GPU indexes, "
                      "MIG indexes (i:j) and UUIDs; got ",
                      yaml::Describe(f.node)));
}

absl::StatusOr<ReplicatedResource> ParseReplicatedResource(ParseContext& ctx,
                                                           const Field& f) {
  ReplicatedResource r;
  bool has_name = false;
  bool has_replicas = false;
  GPULET_RETURN_IF_ERROR(ReadMap(
      ctx, f,
      {{"name",
        [&](const Field& n) -> absl::Status {
          GPULET_ASSIGN_OR_RETURN(r.name, ReadResourceName(ctx, n));
          has_name = true;
          return absl::OkStatus();
        }},
       {"rename",
        [&](const Field& n) -> absl::Status {
          GPULET_ASSIGN_OR_RETURN(r.rename, ReadResourceName(ctx, n));
          return absl::OkStatus();
        }},
       {"devices",
        [&](const Field& d) { return ReadDevices(ctx, d, &r.devices); }},
       {"replicas", [&](const Field& n) -> absl::Status {
          GPULET_ASSIGN_OR_RETURN(int64_t replicas, ctx.reader.Int(n));
          r.replicas = static_cast<int>(replicas);
          has_replicas = true;
          return absl::OkStatus();
        }}}));
  if (!f.node.IsMap()) {
    return ctx.reader.Error(f, absl::StrCat("expected a map with name and "
                                            "replicas, got ",
                                            yaml::Describe(f.node)));
  }
  if (!has_name) return Missing(ctx, f, "name");
  if (!has_replicas) return Missing(ctx, f, "replicas");
  return r;
}

absl::StatusOr<ReplicatedResources> ParseReplicated(ParseContext& ctx,
                                                    const Field& f,
                                                    bool is_mps) {
  ReplicatedResources section;
  // NVIDIA's NewConfig keeps MPS's historical default unless set.
  section.fail_requests_greater_than_one = is_mps;
  bool has_resources = false;
  GPULET_RETURN_IF_ERROR(
      ReadMap(ctx, f,
              {{"renameByDefault", SetBool(ctx, &section.rename_by_default)},
               {"failRequestsGreaterThanOne",
                SetBool(ctx, &section.fail_requests_greater_than_one)},
               {"resources", [&](const Field& list) -> absl::Status {
                  has_resources = true;
                  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                                          ctx.reader.List(list, kMaxResources));
                  for (const Field& item : items) {
                    ctx.reader.Record(item);
                    GPULET_ASSIGN_OR_RETURN(ReplicatedResource r,
                                            ParseReplicatedResource(ctx, item));
                    section.resources.push_back(std::move(r));
                  }
                  return absl::OkStatus();
                }}}));
  if (!has_resources) return Missing(ctx, f, "resources");
  for (size_t i = 0; i < section.resources.size(); ++i) {
    ReplicatedResource& r = section.resources[i];
    if (section.rename_by_default && r.rename.empty()) {
      r.rename = absl::StrCat(r.name, kSharedResourceSuffix);
      std::string base = IndexPath(JoinPath(f.path, "resources"), i);
      auto& origins = ctx.config->origins;
      origins[JoinPath(base, "rename")] = origins[JoinPath(base, "name")];
    }
  }
  return section;
}

absl::Status ReadDurationInto(ParseContext& ctx, const Field& f,
                              absl::Duration* out) {
  std::optional<absl::Duration> d;
  GPULET_RETURN_IF_ERROR(ReadDuration(ctx, f, &d));
  *out = *d;
  return absl::OkStatus();
}

absl::StatusOr<MemoryShares> ParseMemory(ParseContext& ctx, const Field& f) {
  MemoryShares m;
  GPULET_RETURN_IF_ERROR(ReadMap(
      ctx, f,
      {{"resourceName",
        [&](const Field& n) -> absl::Status {
          GPULET_ASSIGN_OR_RETURN(std::string name, ctx.reader.String(n, 320));
          absl::StatusOr<std::string> full = QualifyExtendedResourceName(name);
          if (!full.ok()) return ctx.reader.Error(n, full.status().message());
          m.resource_name = *std::move(full);
          return absl::OkStatus();
        }},
       {"unit",
        [&](const Field& u) -> absl::Status {
          GPULET_ASSIGN_OR_RETURN(std::string text, ctx.reader.String(u, 32));
          absl::StatusOr<int64_t> mib = ParseMemoryUnit(text);
          if (!mib.ok()) return ctx.reader.Error(u, mib.status().message());
          m.unit_mib = *mib;
          return absl::OkStatus();
        }},
       {"devices",
        [&](const Field& d) { return ReadDevices(ctx, d, &m.devices); }},
       {"maxDevicesPerNode",
        [&](const Field& n) -> absl::Status {
          GPULET_ASSIGN_OR_RETURN(int64_t max, ctx.reader.Int(n));
          m.max_devices_per_node = static_cast<int>(max);
          return absl::OkStatus();
        }},
       {"pendingTimeout",
        [&](const Field& d) {
          return ReadDurationInto(ctx, d, &m.pending_timeout);
        }},
       {"resyncPeriod",
        [&](const Field& d) {
          return ReadDurationInto(ctx, d, &m.resync_period);
        }},
       {"policy", SetEnum(ctx, &m.policy, MemoryPolicyNames())},
       {"mps", [&](const Field& mps) {
          return ReadMap(
              ctx, mps,
              {{"enabled", SetBool(ctx, &m.mps)},
               {"computeByShare", SetBool(ctx, &m.mps_compute_by_share)}});
        }}}));
  return m;
}

absl::Status ParseResourceList(ParseContext& ctx, const Field& f,
                               std::vector<Resource>* out) {
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          ctx.reader.List(f, kMaxResources));
  for (const Field& item : items) {
    ctx.reader.Record(item);
    Resource r;
    bool has_pattern = false;
    bool has_name = false;
    GPULET_RETURN_IF_ERROR(ReadMap(
        ctx, item,
        {{"pattern",
          [&](const Field& p) -> absl::Status {
            GPULET_ASSIGN_OR_RETURN(r.pattern, ctx.reader.String(p, 256));
            has_pattern = true;
            return absl::OkStatus();
          }},
         {"name", [&](const Field& n) -> absl::Status {
            GPULET_ASSIGN_OR_RETURN(r.name, ReadResourceName(ctx, n));
            has_name = true;
            return absl::OkStatus();
          }}}));
    if (!has_pattern) return Missing(ctx, item, "pattern");
    if (!has_name) return Missing(ctx, item, "name");
    out->push_back(std::move(r));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseResources(ParseContext& ctx, const Field& field) {
  Resources& r = ctx.config->resources;
  return ReadMap(
      ctx, field,
      {{"gpus",
        [&](const Field& f) { return ParseResourceList(ctx, f, &r.gpus); }},
       {"mig",
        [&](const Field& f) { return ParseResourceList(ctx, f, &r.mig); }}});
}

absl::Status ParseSharing(ParseContext& ctx, const Field& field) {
  Sharing& s = ctx.config->sharing;
  auto section = [&](std::optional<ReplicatedResources>* out, bool is_mps) {
    return [&ctx, out, is_mps](const Field& f) -> absl::Status {
      GPULET_ASSIGN_OR_RETURN(*out, ParseReplicated(ctx, f, is_mps));
      return absl::OkStatus();
    };
  };
  return ReadMap(ctx, field,
                 {{"timeSlicing", section(&s.time_slicing, false)},
                  {"mps", section(&s.mps, true)},
                  {"memory", [&ctx, &s](const Field& f) -> absl::Status {
                     GPULET_ASSIGN_OR_RETURN(s.memory, ParseMemory(ctx, f));
                     return absl::OkStatus();
                   }}});
}

absl::Status ParseImex(ParseContext& ctx, const Field& field) {
  Imex& imex = ctx.config->imex;
  return ReadMap(
      ctx, field,
      {{"channelIDs",
        [&](const Field& f) -> absl::Status {
          GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                                  ctx.reader.List(f, kMaxChannelIds));
          for (const Field& item : items) {
            ctx.reader.Record(item);
            GPULET_ASSIGN_OR_RETURN(int64_t id, ctx.reader.Int(item));
            imex.channel_ids.push_back(static_cast<int>(id));
          }
          return absl::OkStatus();
        }},
       {"required", SetBool(ctx, &imex.required)}});
}

}  // namespace gpulet::config::internal
