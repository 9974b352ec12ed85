#include "src/dra/runner/dra_config.h"

#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/config/parser.h"

namespace gpulet::daemon {
namespace {

using ::testing::HasSubstr;

config::EnvLookup NoEnv() {
  return [](const std::string&) { return std::nullopt; };
}

config::Config File(const std::string& yaml) {
  absl::StatusOr<config::Config> c = config::ParseConfig(yaml, "f.yaml");
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : config::Config{};
}

TEST(DraConfigTest, DefaultsWithoutAFile) {
  absl::StatusOr<config::Config> none = LoadDraConfigFile("");
  ASSERT_TRUE(none.ok());
  absl::StatusOr<DraSettings> s = ResolveDraSettings({}, *none, NoEnv());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->dra.unhealthy_devices, config::UnhealthyDevices::kDrop);
  EXPECT_EQ(s->health, health::MonitorOptions{});
  EXPECT_EQ(s->metrics_address, "");
}

TEST(DraConfigTest, TheFilesSectionsApply) {
  const config::Config file = File(
      "health:\n"
      "  quietPeriod: 2s\n"
      "  xids: [{codes: [31], action: unhealthy}]\n"
      "metrics: {address: '127.0.0.1:0'}\n"
      "dra: {unhealthyDevices: taint, taints: {lost: NoSchedule}}\n");
  absl::StatusOr<DraSettings> s = ResolveDraSettings({}, file, NoEnv());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->health.quiet_period, absl::Seconds(2));
  EXPECT_FALSE(s->health.ignored_xids.contains(31));
  EXPECT_EQ(s->metrics_address, "127.0.0.1:0");
  EXPECT_EQ(s->dra.unhealthy_devices, config::UnhealthyDevices::kTaint);
  EXPECT_EQ(s->dra.unhealthy_effect, config::TaintEffect::kNoSchedule);
  EXPECT_EQ(s->dra.lost_effect, config::TaintEffect::kNoSchedule);
}

TEST(DraConfigTest, FlagsAndEnvironmentBeatTheFile) {
  const config::Config file = File(
      "health: {quietPeriod: 2s}\n"
      "metrics: {address: ':9400'}\n"
      "dra: {unhealthyDevices: taint}\n");
  DraConfigFlags flags;
  flags.unhealthy_devices = "drop";
  flags.lost_taint_effect = "None";
  flags.metrics_address = "127.0.0.1:9500";
  auto env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "GPULET_HEALTH_QUIET_PERIOD") return "7s";
    return std::nullopt;
  };
  absl::StatusOr<DraSettings> s = ResolveDraSettings(flags, file, env);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->dra.unhealthy_devices, config::UnhealthyDevices::kDrop);
  EXPECT_EQ(s->dra.lost_effect, config::TaintEffect::kNone);
  EXPECT_EQ(s->metrics_address, "127.0.0.1:9500");
  EXPECT_EQ(s->health.quiet_period, absl::Seconds(7));
}

TEST(DraConfigTest, ErrorsNameTheFlagOrKey) {
  DraConfigFlags flags;
  flags.unhealthy_taint_effect = "noschedule";
  absl::StatusOr<DraSettings> s =
      ResolveDraSettings(flags, config::Config{}, NoEnv());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("--unhealthy-taint-effect"));
  flags = {};
  flags.metrics_tls.cert_file = "/c.pem";
  s = ResolveDraSettings(flags, config::Config{}, NoEnv());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("--metrics-tls-key-file"));
  absl::StatusOr<config::Config> missing =
      LoadDraConfigFile("/nonexistent/gpulet.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("/nonexistent/gpulet.yaml"));
}

}  // namespace
}  // namespace gpulet::daemon
