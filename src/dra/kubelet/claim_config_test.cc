#include "src/dra/kubelet/claim_config.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::dra {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const ClaimRef kRef{.namespace_name = "ns", .name = "c", .uid = "u"};

OpaqueConfig Config(json parameters) {
  OpaqueConfig c;
  c.parameters = std::move(parameters);
  return c;
}

json Gpu(json sharing) {
  return {{"apiVersion", "resource.nvidia.com/v1beta1"},
          {"kind", "GpuConfig"},
          {"sharing", std::move(sharing)}};
}

TEST(ClaimConfigTest, NoConfigIsNoSharing) {
  absl::StatusOr<ClaimSharing> got = ParseClaimConfig({}, kRef);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->strategy, "");
  EXPECT_TRUE(got->Env().empty());
}

TEST(ClaimConfigTest, MpsPercentageBecomesEnvAndLaterConfigsWin) {
  absl::StatusOr<ClaimSharing> got = ParseClaimConfig(
      {Config(Gpu({{"strategy", "TimeSlicing"},
                   {"timeSlicingConfig", {{"interval", "Long"}}}})),
       Config(Gpu({{"strategy", "MPS"},
                   {"mpsConfig", {{"defaultActiveThreadPercentage", 25}}}}))},
      kRef);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->strategy, "MPS");
  EXPECT_EQ(got->interval, "");
  EXPECT_THAT(got->Env(), ElementsAre("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"));
}

TEST(ClaimConfigTest, TimeSlicingIntervalIsKept) {
  json mig = Gpu({{"strategy", "TimeSlicing"},
                  {"timeSlicingConfig", {{"interval", "Short"}}}});
  mig["kind"] = "MigDeviceConfig";
  absl::StatusOr<ClaimSharing> got = ParseClaimConfig({Config(mig)}, kRef);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->interval, "Short");
  EXPECT_TRUE(got->Env().empty());
}

TEST(ClaimConfigTest, ErrorsNameTheClaimTheConfigAndTheField) {
  json bad_version = Gpu({{"strategy", "MPS"}});
  bad_version["apiVersion"] = "v9";
  json bad_kind = Gpu({{"strategy", "MPS"}});
  bad_kind["kind"] = "TpuConfig";
  json unknown = Gpu({{"strategy", "MPS"}});
  unknown["extra"] = 1;
  const std::pair<json, const char*> cases[] = {
      {json::array(), "parameters is not an object"},
      {bad_version, "apiVersion \"v9\""},
      {bad_kind, "kind \"TpuConfig\""},
      {unknown, "unknown field \"extra\""},
      {Gpu({{"strategy", "Spatial"}}), "sharing.strategy \"Spatial\""},
      {Gpu({{"strategy", "TimeSlicing"},
            {"timeSlicingConfig", {{"interval", "Forever"}}}}),
       "interval \"Forever\""},
      {Gpu({{"strategy", "MPS"},
            {"mpsConfig", {{"defaultActiveThreadPercentage", 101}}}}),
       "defaultActiveThreadPercentage 101"},
      {Gpu({{"strategy", "MPS"}, {"bogus", 1}}), "sharing: unknown field"},
  };
  for (const auto& [parameters, want] : cases) {
    absl::StatusOr<ClaimSharing> got = ParseClaimConfig(
        {Config(Gpu({{"strategy", "MPS"}})), Config(parameters)}, kRef);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << want;
    EXPECT_THAT(got.status().message(),
                HasSubstr("claim ns/c: opaque config [1]: "))
        << want;
    EXPECT_THAT(got.status().message(), HasSubstr(want));
  }
}

}  // namespace
}  // namespace gpulet::dra
