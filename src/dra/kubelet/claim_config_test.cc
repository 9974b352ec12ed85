#include "src/dra/kubelet/claim_config.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::dra {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;

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

json Mps(json mps_config) {
  return Gpu({{"strategy", "MPS"}, {"mpsConfig", std::move(mps_config)}});
}

// The opaque configurations of NVIDIA's published example claims, as
// written there (NVIDIA/k8s-dra-driver-gpu, Apache-2.0:
// demo/specs/quickstart/v1/gpu-test-mps.yaml, gpu-test5.yaml and
// gpu-test6.yaml; tests/bats/specs/gpu-timeslicing.yaml and
// gpu-simple-mig-ts.yaml).
const char* const kNvidiaExamples[] = {
    R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
        "sharing": {"strategy": "MPS", "mpsConfig": {
          "defaultActiveThreadPercentage": 50,
          "defaultPinnedDeviceMemoryLimit": "10Gi"}}})",
    R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
        "sharing": {"strategy": "TimeSlicing",
                    "timeSlicingConfig": {"interval": "Long"}}})",
    R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
        "sharing": {"strategy": "TimeSlicing",
                    "timeSlicingConfig": {"interval": "Short"}}})",
    R"({"apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "MigDeviceConfig", "sharing": {"strategy": "TimeSlicing"}})",
};

TEST(ClaimConfigTest, NoConfigIsNoSharing) {
  absl::StatusOr<ClaimSharing> got = ParseClaimConfig({}, kRef);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, ClaimSharing{});
}

TEST(ClaimConfigTest, NvidiasPublishedExamplesAreAccepted) {
  for (const char* text : kNvidiaExamples) {
    absl::StatusOr<OpaqueSettings> got =
        DecodeOpaqueParameters(json::parse(text));
    EXPECT_TRUE(got.ok()) << text << ": " << got.status();
  }
  absl::StatusOr<OpaqueSettings> mps =
      DecodeOpaqueParameters(json::parse(kNvidiaExamples[0]));
  ASSERT_TRUE(mps.ok());
  EXPECT_EQ(mps->kind, "GpuConfig");
  EXPECT_EQ(mps->sharing.strategy, "MPS");
  EXPECT_EQ(mps->sharing.active_thread_percentage, 50);
  EXPECT_EQ(mps->sharing.pinned_memory_limit, int64_t{10} << 30);
}

TEST(ClaimConfigTest, EveryMpsFieldIsDecoded) {
  absl::StatusOr<ClaimSharing> got = ParseClaimConfig(
      {Config(Mps({{"defaultActiveThreadPercentage", 25},
                   {"defaultPinnedDeviceMemoryLimit", 1073741824},
                   {"defaultPerDevicePinnedMemoryLimit",
                    {{"1", "2Gi"}, {"GPU-b", "512Mi"}}}}))},
      kRef);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->strategy, "MPS");
  EXPECT_EQ(got->active_thread_percentage, 25);
  EXPECT_EQ(got->pinned_memory_limit, int64_t{1} << 30);
  EXPECT_THAT(got->per_device_pinned_memory_limit,
              ElementsAre(Pair("1", int64_t{2} << 30),
                          Pair("GPU-b", int64_t{512} << 20)));
  // The default for each device, the per-device entries over it; an index
  // counts in the claim's device order.
  absl::StatusOr<std::map<std::string, int64_t>> mib =
      got->PinnedMemoryLimitsMiB({"GPU-a", "GPU-b", "GPU-c"});
  ASSERT_TRUE(mib.ok()) << mib.status();
  EXPECT_THAT(*mib, ElementsAre(Pair("GPU-a", 1024), Pair("GPU-b", 512),
                                Pair("GPU-c", 1024)));
  mib = got->PinnedMemoryLimitsMiB({"GPU-a"});
  EXPECT_THAT(std::string(mib.status().message()),
              StartsWith("sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit"
                         "[\"1\"]: the claim has 1 device(s)"));
  ClaimSharing by_uuid = *got;
  by_uuid.per_device_pinned_memory_limit.erase("1");
  EXPECT_THAT(by_uuid.PinnedMemoryLimitsMiB({"GPU-a"}).status().message(),
              HasSubstr("[\"GPU-b\"]: is not one of the claim's devices"));
  // Nothing set: no limit.
  EXPECT_TRUE(ClaimSharing{}.PinnedMemoryLimitsMiB({"GPU-a"})->empty());
}

TEST(ClaimConfigTest, TheLastConfigWinsWhole) {
  absl::StatusOr<ClaimSharing> got = ParseClaimConfig(
      {Config(Gpu({{"strategy", "TimeSlicing"},
                   {"timeSlicingConfig", {{"interval", "Long"}}}})),
       Config(Mps({{"defaultActiveThreadPercentage", 25}}))},
      kRef);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->strategy, "MPS");
  EXPECT_EQ(got->interval, "");
  EXPECT_EQ(got->active_thread_percentage, 25);

  // A later configuration without sharing means no sharing.
  got = ParseClaimConfig({Config(Mps({{"defaultActiveThreadPercentage", 25}})),
                          Config({{"apiVersion", "resource.nvidia.com/v1beta1"},
                                  {"kind", "GpuConfig"}})},
                         kRef);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, ClaimSharing{});
}

TEST(ClaimConfigTest, NullIsAbsent) {
  absl::StatusOr<OpaqueSettings> got = DecodeOpaqueParameters(
      Gpu({{"strategy", "MPS"},
           {"timeSlicingConfig", nullptr},
           {"mpsConfig",
            {{"defaultActiveThreadPercentage", nullptr},
             {"defaultPinnedDeviceMemoryLimit", nullptr}}}}));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->sharing.strategy, "MPS");
  EXPECT_FALSE(got->sharing.pinned_memory_limit.has_value());
}

// Every field that is not NVIDIA's, or not implemented, or out of range,
// is refused with its path; nothing is ignored.
TEST(ClaimConfigTest, RefusalsNameTheField) {
  json bad_version = Gpu({{"strategy", "MPS"}});
  bad_version["apiVersion"] = "v9";
  json bad_kind = Gpu({{"strategy", "MPS"}});
  bad_kind["kind"] = "TpuConfig";
  json unknown = Gpu({{"strategy", "MPS"}});
  unknown["extra"] = 1;
  json metadata = Gpu({{"strategy", "MPS"}});
  metadata["metadata"] = {{"name", "x"}};
  json mig_ts = Gpu({{"strategy", "TimeSlicing"},
                     {"timeSlicingConfig", {{"interval", "Long"}}}});
  mig_ts["kind"] = "MigDeviceConfig";
  json gpu_iommu = Gpu({{"strategy", "MPS"}});
  gpu_iommu["iommu"] = json::object();
  const json vfio = {
      {"apiVersion", "resource.nvidia.com/v1beta1"},
      {"kind", "VfioDeviceConfig"},
      {"iommu", {{"backendPolicy", "LegacyOnly"}, {"enableAPIDevice", true}}}};
  json vfio_bad_policy = vfio;
  vfio_bad_policy["iommu"]["backendPolicy"] = "Never";
  json vfio_bad_field = vfio;
  vfio_bad_field["iommu"]["iommufd"] = true;
  const std::pair<json, const char*> cases[] = {
      {json::array(), "parameters: is not an object"},
      {bad_version, "apiVersion: \"v9\" is not resource.nvidia.com/v1beta1"},
      {bad_kind, "kind: \"TpuConfig\" is not"},
      {unknown, "extra: unknown field"},
      {metadata, "metadata: unknown field"},
      {gpu_iommu, "iommu: is not a field of GpuConfig"},
      {Gpu("MPS"), "sharing: is not an object"},
      {Gpu({{"strategy", "Spatial"}}), "sharing.strategy: \"Spatial\" is not"},
      {Gpu(json::object()), "sharing.strategy: null is not"},
      {Gpu({{"strategy", "MPS"}, {"bogus", 1}}), "sharing.bogus: unknown"},
      {Gpu({{"strategy", "TimeSlicing"},
            {"timeSlicingConfig", {{"interval", "Forever"}}}}),
       "sharing.timeSlicingConfig.interval: \"Forever\" is not"},
      {Gpu({{"strategy", "TimeSlicing"},
            {"timeSlicingConfig", {{"interval", "Long"}, {"ms", 5}}}}),
       "sharing.timeSlicingConfig.ms: unknown field"},
      {Gpu({{"strategy", "MPS"},
            {"timeSlicingConfig", {{"interval", "Long"}}}}),
       "sharing.timeSlicingConfig: is for strategy TimeSlicing"},
      {Gpu({{"strategy", "TimeSlicing"}, {"mpsConfig", json::object()}}),
       "sharing.mpsConfig: is for strategy MPS"},
      {mig_ts, "sharing.timeSlicingConfig: unknown field"},
      {Mps({{"defaultActiveThreadPercentage", 101}}),
       "sharing.mpsConfig.defaultActiveThreadPercentage: 101 is not"},
      {Mps({{"defaultActiveThreadPercentage", 0}}),
       "sharing.mpsConfig.defaultActiveThreadPercentage: 0 is not"},
      {Mps({{"defaultActiveThreadPercentage", "50"}}),
       "sharing.mpsConfig.defaultActiveThreadPercentage: \"50\" is not"},
      {Mps({{"defaultPinnedDeviceMemoryLimit", "10Qi"}}),
       "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: "},
      {Mps({{"defaultPinnedDeviceMemoryLimit", "512Ki"}}),
       "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: \"512Ki\" is below "
       "1Mi"},
      {Mps({{"defaultPinnedDeviceMemoryLimit", true}}),
       "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: true is not a "
       "quantity"},
      {Mps({{"defaultPerDevicePinnedMemoryLimit", {{"0", "1Ki"}}}}),
       "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit[\"0\"]: \"1Ki\" "
       "is below"},
      {Mps({{"defaultPerDevicePinnedMemoryLimit", {{"first", "1Gi"}}}}),
       "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit[\"first\"]: the "
       "key is neither"},
      {Mps({{"defaultPerDevicePinnedMemoryLimit", json::array()}}),
       "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit: is not an "
       "object"},
      {Mps({{"defaultMemoryLimit", "1Gi"}}),
       "sharing.mpsConfig.defaultMemoryLimit: unknown field"},
      {vfio, "kind: VfioDeviceConfig is not implemented"},
      {vfio_bad_policy, "iommu.backendPolicy: \"Never\" is not"},
      {vfio_bad_field, "iommu.iommufd: unknown field"},
  };
  for (const auto& [parameters, want] : cases) {
    absl::StatusOr<ClaimSharing> got = ParseClaimConfig(
        {Config(Gpu({{"strategy", "MPS"}})), Config(parameters)}, kRef);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << want;
    EXPECT_THAT(
        std::string(got.status().message()),
        StartsWith(std::string("claim ns/c: opaque config [1]: ") + want));
    // The webhook's view: the same error below the parameters' path.
    absl::StatusOr<OpaqueSettings> decoded = DecodeOpaqueParameters(
        parameters, "spec.devices.config[3].opaque.parameters");
    const std::string field = want;
    EXPECT_THAT(
        std::string(decoded.status().message()),
        StartsWith(field.starts_with("parameters:")
                       ? "spec.devices.config[3].opaque.parameters: "
                       : "spec.devices.config[3].opaque.parameters." + field))
        << want;
  }
}

}  // namespace
}  // namespace gpulet::dra
