#include "src/gpu/health/xid_policy.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::health {
namespace {

using ::testing::HasSubstr;

nvml::Event XidEvent(uint64_t xid, uint32_t gi = kNoInstance,
                     uint32_t ci = kNoInstance) {
  nvml::Event event;
  event.type = nvmlEventTypeXidCriticalError;
  event.data = xid;
  event.gpu_instance_id = gi;
  event.compute_instance_id = ci;
  return event;
}

nvml::Event TypedEvent(uint64_t type) {
  nvml::Event event;
  event.type = type;
  return event;
}

MonitorOptions Parse(const char* disable, const char* enable) {
  absl::StatusOr<MonitorOptions> options = ParseHealthEnv(disable, enable);
  EXPECT_TRUE(options.ok()) << options.status();
  return options.ok() ? *options : MonitorOptions{};
}

TEST(XidPolicyTest, MaskIsXidAndEcc) { EXPECT_EQ(kHealthEventMask, 0xBu); }

HealthEvent Event(uint64_t xid, HealthCause cause, bool healthy = false) {
  HealthEvent e;
  e.gpu_index = 0;
  e.xid = xid;
  e.cause = cause;
  e.healthy = healthy;
  return e;
}

TEST(XidPolicyTest, LossIsXid79OrAProbeFindingTheGpuLost) {
  EXPECT_TRUE(IsGpuLoss(Event(79, HealthCause::kXid)));
  EXPECT_TRUE(IsGpuLoss(Event(0, HealthCause::kLost)));
  EXPECT_FALSE(IsGpuLoss(Event(48, HealthCause::kXid)));
  EXPECT_FALSE(IsGpuLoss(Event(0, HealthCause::kDoubleBitEcc)));
  EXPECT_FALSE(IsGpuLoss(Event(0, HealthCause::kRecoveredReset, true)));
}

TEST(XidPolicyTest, DefaultsIgnoreNvidiasApplicationErrors) {
  const MonitorOptions options;
  EXPECT_EQ(DefaultIgnoredXids(),
            (std::set<uint64_t>{13, 31, 43, 45, 68, 109}));
  EXPECT_FALSE(options.disabled);
  EXPECT_FALSE(options.xids_disabled);
  EXPECT_TRUE(options.dbe_unhealthy);
  EXPECT_EQ(Parse(nullptr, nullptr), options);
  EXPECT_EQ(Parse("", ""), options);
  EXPECT_EQ(Parse(" , ", "\t"), options);
}

struct XidCase {
  uint64_t xid;
  bool fatal;
};

TEST(XidPolicyTest, DefaultXidTable) {
  const MonitorOptions options;
  const std::vector<XidCase> cases = {
      {13, false}, {31, false},  {43, false}, {45, false},
      {68, false}, {109, false}, {8, true},   {48, true},
      {63, true},  {64, true},   {74, true},  {79, true},
      {94, true},  {95, true},   {119, true}, {999, true},
  };
  for (const XidCase& c : cases) {
    SCOPED_TRACE(c.xid);
    EXPECT_EQ(IsXidIgnored(options, c.xid), !c.fatal);
    const std::optional<HealthEvent> decision =
        Decide(XidEvent(c.xid), 3, options);
    ASSERT_EQ(decision.has_value(), c.fatal);
    if (c.fatal) {
      EXPECT_EQ(decision->gpu_index, 3);
      EXPECT_EQ(decision->xid, c.xid);
      EXPECT_FALSE(decision->healthy);
      EXPECT_FALSE(decision->gpu_instance_id.has_value());
      EXPECT_FALSE(decision->compute_instance_id.has_value());
      EXPECT_THAT(decision->reason, HasSubstr("Xid " + std::to_string(c.xid)));
    }
  }
}

TEST(XidPolicyTest, ReasonNamesWellKnownXids) {
  const std::optional<HealthEvent> lost = Decide(XidEvent(79), 0, {});
  ASSERT_TRUE(lost.has_value());
  EXPECT_EQ(lost->reason, "Xid 79 (GPU has fallen off the bus)");
  const std::optional<HealthEvent> odd = Decide(XidEvent(999), 0, {});
  ASSERT_TRUE(odd.has_value());
  EXPECT_EQ(odd->reason, "Xid 999");
  EXPECT_EQ(XidDescription(13), "Graphics Engine Exception");
  EXPECT_EQ(XidDescription(12345), "");
}

TEST(XidPolicyTest, MigScopedEventsCarryInstanceIds) {
  const std::optional<HealthEvent> both = Decide(XidEvent(94, 7, 0), 1, {});
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->gpu_instance_id, 7u);
  EXPECT_EQ(both->compute_instance_id, 0u);
  const std::optional<HealthEvent> gi_only =
      Decide(XidEvent(94, 2, kNoInstance), 1, {});
  ASSERT_TRUE(gi_only.has_value());
  EXPECT_EQ(gi_only->gpu_instance_id, 2u);
  EXPECT_FALSE(gi_only->compute_instance_id.has_value());
  // Ignored Xids stay ignored when scoped to a MIG device.
  EXPECT_FALSE(Decide(XidEvent(31, 7, 0), 1, {}).has_value());
}

TEST(XidPolicyTest, DoubleBitEccIsFatalSingleBitIsNot) {
  const std::optional<HealthEvent> dbe =
      Decide(TypedEvent(nvmlEventTypeDoubleBitEccError), 2, {});
  ASSERT_TRUE(dbe.has_value());
  EXPECT_EQ(dbe->gpu_index, 2);
  EXPECT_EQ(dbe->xid, 0u);
  EXPECT_EQ(dbe->reason, "double-bit ECC error");
  EXPECT_FALSE(
      Decide(TypedEvent(nvmlEventTypeSingleBitEccError), 2, {}).has_value());
  EXPECT_FALSE(Decide(TypedEvent(nvmlEventTypePState), 2, {}).has_value());
  EXPECT_FALSE(Decide(TypedEvent(nvmlEventTypeClock), 2, {}).has_value());
}

TEST(XidPolicyTest, DisableAllTurnsEverythingOff) {
  for (const char* value : {"all", "ALL", " all ", "79,all"}) {
    SCOPED_TRACE(value);
    const MonitorOptions options = Parse(value, nullptr);
    EXPECT_TRUE(options.disabled);
    EXPECT_TRUE(options.xids_disabled);
    EXPECT_FALSE(options.dbe_unhealthy);
    EXPECT_FALSE(Decide(XidEvent(79), 0, options).has_value());
    EXPECT_FALSE(Decide(TypedEvent(nvmlEventTypeDoubleBitEccError), 0, options)
                     .has_value());
  }
}

TEST(XidPolicyTest, DisableXidsKeepsDoubleBitEcc) {
  const MonitorOptions options = Parse("xids", nullptr);
  EXPECT_FALSE(options.disabled);
  EXPECT_TRUE(options.xids_disabled);
  EXPECT_TRUE(options.dbe_unhealthy);
  EXPECT_FALSE(Decide(XidEvent(79), 0, options).has_value());
  EXPECT_FALSE(Decide(XidEvent(48), 0, options).has_value());
  EXPECT_TRUE(Decide(TypedEvent(nvmlEventTypeDoubleBitEccError), 0, options)
                  .has_value());
}

TEST(XidPolicyTest, DisableListAddsToTheDefaults) {
  const MonitorOptions options = Parse("109,999", nullptr);
  EXPECT_FALSE(options.disabled);
  EXPECT_FALSE(options.xids_disabled);
  EXPECT_EQ(options.ignored_xids,
            (std::set<uint64_t>{13, 31, 43, 45, 68, 109, 999}));
  EXPECT_FALSE(Decide(XidEvent(999), 0, options).has_value());
  EXPECT_FALSE(Decide(XidEvent(13), 0, options).has_value());
  EXPECT_TRUE(Decide(XidEvent(79), 0, options).has_value());
  // Spaces, commas and both work as separators.
  EXPECT_EQ(Parse("999 74", nullptr).ignored_xids,
            Parse(" 74,, 999 ,", nullptr).ignored_xids);
  EXPECT_TRUE(Parse("999 74", nullptr).ignored_xids.contains(74));
}

TEST(XidPolicyTest, EnableReEnablesDefaultIgnoredXids) {
  const MonitorOptions options = Parse(nullptr, "31");
  EXPECT_EQ(options.ignored_xids, (std::set<uint64_t>{13, 43, 45, 68, 109}));
  EXPECT_EQ(options.enabled_xids, (std::set<uint64_t>{31}));
  EXPECT_TRUE(Decide(XidEvent(31), 0, options).has_value());
  EXPECT_FALSE(Decide(XidEvent(13), 0, options).has_value());
}

TEST(XidPolicyTest, EnableOverridesDisable) {
  const MonitorOptions options = Parse("11", "11");
  EXPECT_FALSE(IsXidIgnored(options, 11));
  EXPECT_TRUE(IsXidIgnored(options, 13));
}

TEST(XidPolicyTest, EnableSelectsXidsWhenAllAreDisabled) {
  // NVIDIA documents this; its code disables the whole monitor instead.
  const MonitorOptions xids = Parse("xids", "79");
  EXPECT_FALSE(xids.disabled);
  EXPECT_TRUE(Decide(XidEvent(79), 0, xids).has_value());
  EXPECT_FALSE(Decide(XidEvent(48), 0, xids).has_value());
  const MonitorOptions all = Parse("all", "79");
  EXPECT_FALSE(all.disabled);
  EXPECT_FALSE(all.dbe_unhealthy);
  EXPECT_TRUE(Decide(XidEvent(79), 0, all).has_value());
  EXPECT_FALSE(Decide(XidEvent(48), 0, all).has_value());
}

TEST(XidPolicyTest, EnableAllMakesEveryXidFatal) {
  for (const char* disable : {"", "all", "xids", "999"}) {
    for (const char* enable : {"all", "xids", "All"}) {
      SCOPED_TRACE(std::string(disable) + " / " + enable);
      const MonitorOptions options = Parse(disable, enable);
      EXPECT_FALSE(options.disabled);
      EXPECT_FALSE(options.xids_disabled);
      EXPECT_TRUE(options.dbe_unhealthy);
      for (uint64_t xid : {13u, 31u, 43u, 45u, 68u, 109u, 999u}) {
        EXPECT_TRUE(Decide(XidEvent(xid), 0, options).has_value()) << xid;
      }
    }
  }
}

struct BadCase {
  const char* disable;
  const char* enable;
  const char* variable;
  const char* token;
};

TEST(XidPolicyTest, MalformedTokensAreErrorsNamingVariableAndToken) {
  const std::vector<BadCase> cases = {
      {"garbage", nullptr, "DP_DISABLE_HEALTHCHECKS", "\"garbage\""},
      {"68,not-an-int,67", nullptr, "DP_DISABLE_HEALTHCHECKS",
       "\"not-an-int\""},
      {"-68", nullptr, "DP_DISABLE_HEALTHCHECKS", "\"-68\""},
      {"+5", nullptr, "DP_DISABLE_HEALTHCHECKS", "\"+5\""},
      {"0x4f", nullptr, "DP_DISABLE_HEALTHCHECKS", "\"0x4f\""},
      {"0", nullptr, "DP_DISABLE_HEALTHCHECKS", "\"0\""},
      {"99999999999999999999999", nullptr, "DP_DISABLE_HEALTHCHECKS",
       "\"99999999999999999999999\""},
      {"79;48", nullptr, "DP_DISABLE_HEALTHCHECKS", "\"79;48\""},
      {nullptr, "7x", "DP_ENABLE_HEALTHCHECKS", "\"7x\""},
      {"13", "everything", "DP_ENABLE_HEALTHCHECKS", "\"everything\""},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(std::string(c.disable ? c.disable : "") + " / " +
                 (c.enable ? c.enable : ""));
    const absl::StatusOr<MonitorOptions> options =
        ParseHealthEnv(c.disable, c.enable);
    ASSERT_FALSE(options.ok());
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(options.status().message());
    EXPECT_THAT(message, HasSubstr(c.variable));
    EXPECT_THAT(message, HasSubstr(c.token));
  }
}

TEST(XidPolicyTest, DescribeOptions) {
  EXPECT_EQ(DescribeOptions({}),
            "ignoring Xids 13,31,43,45,68,109; double-bit ECC errors fatal; "
            "single-bit ECC errors logged only; recovery after 5m quiet");
  EXPECT_THAT(DescribeOptions(Parse("all", nullptr)), HasSubstr("disabled"));
  EXPECT_THAT(DescribeOptions(Parse("xids", "79,48")),
              HasSubstr("Xid checks disabled except Xids 48,79"));
  EXPECT_THAT(DescribeOptions(Parse(nullptr, "all")),
              HasSubstr("every Xid is fatal"));
}

TEST(XidPolicyTest, QuietPeriodTakesGoDurations) {
  const struct {
    const char* value;
    absl::Duration want;
  } cases[] = {
      {nullptr, absl::Minutes(5)},        {"", absl::Minutes(5)},
      {"0", absl::ZeroDuration()},        {"2s", absl::Seconds(2)},
      {"5m", absl::Minutes(5)},           {"1h30m", absl::Minutes(90)},
      {"1.5s", absl::Milliseconds(1500)},
  };
  for (const auto& c : cases) {
    absl::StatusOr<absl::Duration> period = ParseQuietPeriod(c.value);
    ASSERT_TRUE(period.ok())
        << (c.value ? c.value : "null") << ": " << period.status();
    EXPECT_EQ(*period, c.want) << (c.value ? c.value : "null");
  }
  EXPECT_EQ(*ParseQuietPeriod(nullptr, absl::Seconds(1)), absl::Seconds(1));
}

TEST(XidPolicyTest, BadQuietPeriodNamesTheVariable) {
  for (const char* value : {"5", "five minutes", "-1s", "inf", "3x"}) {
    absl::StatusOr<absl::Duration> period = ParseQuietPeriod(value);
    ASSERT_FALSE(period.ok()) << value;
    EXPECT_EQ(period.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(period.status().message());
    EXPECT_THAT(message, HasSubstr("GPULET_HEALTH_QUIET_PERIOD"));
    EXPECT_THAT(message, HasSubstr(value));
  }
}

}  // namespace
}  // namespace gpulet::health
