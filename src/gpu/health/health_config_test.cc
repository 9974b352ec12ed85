// OptionsFromConfig: the config file's health section merged with the
// environment variables, table-tested.
#include "src/gpu/health/health_config.h"

#include <functional>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/gpu/health/recovery_policy.h"

namespace gpulet::health {
namespace {

using config::XidAction;
using ::testing::HasSubstr;
using Env = std::map<std::string, std::string>;

config::EnvLookup Lookup(const Env& env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

struct Case {
  std::string name;
  config::Health file;
  Env env;
  // Applied to default MonitorOptions to give the expected ones.
  std::function<void(MonitorOptions&)> want;
};

config::Health File(std::function<void(config::Health&)> edit) {
  config::Health h;
  edit(h);
  return h;
}

const Case kCases[] = {
    {"nothing set: NVIDIA's defaults", {}, {}, [](MonitorOptions&) {}},
    {"file quiet period",
     File([](auto& h) { h.quiet_period = absl::Seconds(30); }),
     {},
     [](MonitorOptions& o) { o.quiet_period = absl::Seconds(30); }},
    {"environment quiet period beats the file",
     File([](auto& h) { h.quiet_period = absl::Seconds(30); }),
     {{"GPULET_HEALTH_QUIET_PERIOD", "2m"}},
     [](MonitorOptions& o) { o.quiet_period = absl::Minutes(2); }},
    {"empty environment value leaves the file's",
     File([](auto& h) { h.quiet_period = absl::Seconds(30); }),
     {{"GPULET_HEALTH_QUIET_PERIOD", ""}, {"DP_DISABLE_HEALTHCHECKS", ""}},
     [](MonitorOptions& o) { o.quiet_period = absl::Seconds(30); }},
    {"file disabled",
     File([](auto& h) { h.disabled = true; }),
     {},
     [](MonitorOptions& o) {
       o.disabled = o.xids_disabled = true;
       o.dbe_unhealthy = false;
     }},
    {"DP_ENABLE_HEALTHCHECKS re-enables an Xid the file disabled everything "
     "for",
     File([](auto& h) { h.disabled = true; }),
     {{"DP_ENABLE_HEALTHCHECKS", "79"}},
     [](MonitorOptions& o) {
       o.xids_disabled = true;
       o.dbe_unhealthy = false;
       o.enabled_xids = {79};
     }},
    {"DP_ENABLE_HEALTHCHECKS=all beats a disabled file",
     File([](auto& h) {
       h.disabled = true;
       h.ignored_xids = {79};
     }),
     {{"DP_ENABLE_HEALTHCHECKS", "all"}},
     [](MonitorOptions& o) { o.ignored_xids.clear(); }},
    {"file ignoredXids add to the defaults",
     File([](auto& h) {
       h.ignored_xids = {74, 79};
     }),
     {},
     [](MonitorOptions& o) {
       o.ignored_xids.insert({74, 79});
     }},
    {"file actions",
     File([](auto& h) {
       h.xids = {{{31, 43}, XidAction::kUnhealthy},
                 {{79}, XidAction::kUnhealthy},
                 {{32}, XidAction::kReset},
                 {{999}, XidAction::kIgnore}};
     }),
     {},
     [](MonitorOptions& o) {
       o.ignored_xids = {13, 45, 68, 109, 999};
       o.xid_recovery = {{31, XidRecovery::kQuietPeriod},
                         {43, XidRecovery::kQuietPeriod},
                         {79, XidRecovery::kQuietPeriod},
                         {32, XidRecovery::kReset}};
     }},
    {"DP_DISABLE_HEALTHCHECKS list beats a file action",
     File([](auto& h) {
       h.xids = {{{31, 79}, XidAction::kReset}};
     }),
     {{"DP_DISABLE_HEALTHCHECKS", "79"}},
     [](MonitorOptions& o) {
       o.ignored_xids = {13, 43, 45, 68, 79, 109};
       o.xid_recovery = {{31, XidRecovery::kReset}, {79, XidRecovery::kReset}};
     }},
    {"DP_ENABLE_HEALTHCHECKS beats a file ignore",
     File([](auto& h) {
       h.ignored_xids = {74};
       h.xids = {{{79}, XidAction::kIgnore}};
     }),
     {{"DP_ENABLE_HEALTHCHECKS", "74 79"}},
     [](MonitorOptions& o) {
       o.enabled_xids = {74, 79};
     }},
    {"DP_DISABLE_HEALTHCHECKS=xids keeps the file's recovery modes",
     File([](auto& h) {
       h.xids = {{{48}, XidAction::kUnhealthy}};
     }),
     {{"DP_DISABLE_HEALTHCHECKS", "xids"}},
     [](MonitorOptions& o) {
       o.xids_disabled = true;
       o.xid_recovery = {{48, XidRecovery::kQuietPeriod}};
     }},
};

TEST(OptionsFromConfigTest, Table) {
  for (const Case& c : kCases) {
    absl::StatusOr<MonitorOptions> got =
        OptionsFromConfig(c.file, Lookup(c.env));
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status();
    MonitorOptions want;
    c.want(want);
    EXPECT_EQ(*got, want) << c.name << "\n  got:  " << DescribeOptions(*got)
                          << "\n  want: " << DescribeOptions(want);
  }
}

TEST(OptionsFromConfigTest, NoEnvironmentIsTheFileAlone) {
  config::Health h;
  h.ignored_xids = {74};
  absl::StatusOr<MonitorOptions> got = OptionsFromConfig(h, nullptr);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, FileOptions(h));
  EXPECT_TRUE(IsXidIgnored(*got, 74));
}

TEST(OptionsFromConfigTest, BadEnvironmentValuesNameTheVariable) {
  const std::pair<Env, std::string> cases[] = {
      {{{"DP_DISABLE_HEALTHCHECKS", "4x"}}, "DP_DISABLE_HEALTHCHECKS: \"4x\""},
      {{{"DP_ENABLE_HEALTHCHECKS", "-1"}}, "DP_ENABLE_HEALTHCHECKS: \"-1\""},
      {{{"GPULET_HEALTH_QUIET_PERIOD", "5"}}, "GPULET_HEALTH_QUIET_PERIOD"},
  };
  for (const auto& [env, want] : cases) {
    absl::StatusOr<MonitorOptions> got = OptionsFromConfig({}, Lookup(env));
    ASSERT_FALSE(got.ok()) << want;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got.status().message(), HasSubstr(want));
  }
}

TEST(OptionsFromConfigTest, ActionsDecideRecovery) {
  config::Health h;
  h.xids = {{{79}, XidAction::kUnhealthy}, {{32}, XidAction::kReset}};
  MonitorOptions o = FileOptions(h);
  EXPECT_FALSE(NeedsReset(o, 79));  // a reset Xid by default
  EXPECT_TRUE(NeedsReset(o, 32));   // quiet period by default
  EXPECT_TRUE(NeedsReset(o, 48));   // untouched default
  EXPECT_FALSE(NeedsReset(o, 38));
  EXPECT_TRUE(NeedsReset(o, 0));  // double-bit ECC event
}

TEST(ApplyHealthEnvTest, DefaultBaseEqualsParseHealthEnv) {
  const char* values[] = {nullptr, "", "all", "xids", "79", "13,79", "all 48"};
  for (const char* disable : values) {
    for (const char* enable : values) {
      absl::StatusOr<MonitorOptions> a = ParseHealthEnv(disable, enable);
      absl::StatusOr<MonitorOptions> b =
          ApplyHealthEnv(MonitorOptions{}, disable, enable);
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(*a, *b);
    }
  }
}

}  // namespace
}  // namespace gpulet::health
