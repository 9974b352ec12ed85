// ParseConfig's health.*, metrics.* and dra.* sections: gpulet's own,
// absent from NVIDIA's schema. Cross-field rules (an Xid in two rules) are in
// validate.cc.
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/config/parser_sections.h"

namespace gpulet::config::internal {
namespace {

// Far more than the Xids NVIDIA has defined.
constexpr size_t kMaxXids = 512;
constexpr size_t kMaxXidRules = 64;

absl::Status ReadXids(ParseContext& ctx, const Field& f,
                      std::vector<uint64_t>* out) {
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          ctx.reader.List(f, kMaxXids));
  out->clear();
  for (const Field& item : items) {
    ctx.reader.Record(item);
    GPULET_ASSIGN_OR_RETURN(int64_t xid, ctx.reader.Int(item));
    if (xid < 1) {
      return ctx.reader.Error(
          item, absl::StrCat("an Xid is a positive number, got ", xid));
    }
    out->push_back(static_cast<uint64_t>(xid));
  }
  return absl::OkStatus();
}

absl::StatusOr<XidRule> ParseXidRule(ParseContext& ctx, const Field& f) {
  XidRule rule;
  bool has_codes = false;
  bool has_action = false;
  GPULET_RETURN_IF_ERROR(
      ReadMap(ctx, f,
              {{"codes",
                [&](const Field& c) {
                  has_codes = true;
                  return ReadXids(ctx, c, &rule.codes);
                }},
               {"action", [&](const Field& a) -> absl::Status {
                  has_action = true;
                  GPULET_ASSIGN_OR_RETURN(rule.action,
                                          ctx.reader.Enum(a, XidActionNames()));
                  return absl::OkStatus();
                }}}));
  for (const auto& [key, present] :
       {std::pair<const char*, bool>{"codes", has_codes},
        std::pair<const char*, bool>{"action", has_action}}) {
    if (!present) {
      return ctx.reader.Error(Field{f.node, JoinPath(f.path, key)},
                              "required key is missing");
    }
  }
  return rule;
}

}  // namespace

// As GPULET_HEALTH_QUIET_PERIOD takes it.
absl::Status ReadDuration(ParseContext& ctx, const Field& f,
                          std::optional<absl::Duration>* out) {
  GPULET_ASSIGN_OR_RETURN(std::string text, ctx.reader.String(f, 64));
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration() ||
      d == absl::InfiniteDuration()) {
    return ctx.reader.Error(
        f, absl::StrCat("\"", text,
                        "\" is not a duration (a non-negative number with a "
                        "unit, e.g. \"30s\", \"5m\", \"1h30m\")"));
  }
  *out = d;
  return absl::OkStatus();
}

absl::Status ParseHealth(ParseContext& ctx, const Field& field) {
  Health& h = ctx.config->health;
  return ReadMap(
      ctx, field,
      {{"disabled", SetBool(ctx, &h.disabled)},
       {"quietPeriod",
        [&](const Field& f) { return ReadDuration(ctx, f, &h.quiet_period); }},
       {"ignoredXids",
        [&](const Field& f) { return ReadXids(ctx, f, &h.ignored_xids); }},
       {"xids", [&](const Field& f) -> absl::Status {
          GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                                  ctx.reader.List(f, kMaxXidRules));
          h.xids.clear();
          for (const Field& item : items) {
            ctx.reader.Record(item);
            GPULET_ASSIGN_OR_RETURN(XidRule rule, ParseXidRule(ctx, item));
            h.xids.push_back(std::move(rule));
          }
          return absl::OkStatus();
        }}});
}

absl::Status ParseMetrics(ParseContext& ctx, const Field& field) {
  return ReadMap(
      ctx, field,
      {{"address", SetString(ctx, &ctx.config->metrics.address)},
       {"tlsCertFile", SetString(ctx, &ctx.config->metrics.tls_cert_file)},
       {"tlsKeyFile", SetString(ctx, &ctx.config->metrics.tls_key_file)},
       {"clientCAFile", SetString(ctx, &ctx.config->metrics.client_ca_file)}});
}

absl::Status ParseDra(ParseContext& ctx, const Field& field) {
  Dra& dra = ctx.config->dra;
  return ReadMap(
      ctx, field,
      {{"unhealthyDevices",
        SetEnum(ctx, &dra.unhealthy_devices, UnhealthyDevicesNames())},
       {"taints", [&](const Field& f) {
          return ReadMap(
              ctx, f,
              {{"unhealthy",
                SetEnum(ctx, &dra.unhealthy_effect, TaintEffectNames())},
               {"lost", SetEnum(ctx, &dra.lost_effect, TaintEffectNames())}});
        }}});
}

}  // namespace gpulet::config::internal
