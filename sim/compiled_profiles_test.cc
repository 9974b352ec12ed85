#include "sim/compiled_profiles.h"

#include <string>

#include "gtest/gtest.h"
#include "sim/profiles.h"

namespace gpulet::sim {
namespace {

// The generated code must build exactly what the YAML parser makes of each
// built-in profile, field for field (Machine's operator== covers them all).
TEST(CompiledProfilesTest, EveryProfileEqualsItsParsedYaml) {
  ASSERT_FALSE(ProfileNames().empty());
  for (const std::string& name : ProfileNames()) {
    SCOPED_TRACE(name);
    absl::StatusOr<Machine> parsed = LoadMachine(name);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    std::optional<Machine> compiled = CompiledProfile(name);
    ASSERT_TRUE(compiled.has_value());
    EXPECT_EQ(compiled->source, parsed->source);
    EXPECT_EQ(compiled->gpus.size(), parsed->gpus.size());
    for (size_t i = 0; i < compiled->gpus.size() && i < parsed->gpus.size();
         ++i) {
      EXPECT_TRUE(compiled->gpus[i] == parsed->gpus[i]) << "gpu " << i;
    }
    EXPECT_TRUE(*compiled == *parsed);
  }
}

TEST(CompiledProfilesTest, OnlyProfileNamesMatch) {
  EXPECT_FALSE(CompiledProfile("").has_value());
  EXPECT_FALSE(CompiledProfile("no-such-profile").has_value());
  EXPECT_FALSE(CompiledProfile("/etc/dgx-h100").has_value());
  EXPECT_FALSE(CompiledProfile("dgx-h100.yaml").has_value());
  EXPECT_TRUE(CompiledProfile(kDefaultProfile).has_value());
}

}  // namespace
}  // namespace gpulet::sim
