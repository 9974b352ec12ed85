#include "src/base/config/names.h"

#include <string>

#include "gtest/gtest.h"
#include "src/base/config/config.h"

namespace gpulet::config {
namespace {

TEST(NamesTest, QualifyResourceNameAddsThePrefixOnce) {
  EXPECT_EQ(*QualifyResourceName("gpu"), "nvidia.com/gpu");
  EXPECT_EQ(*QualifyResourceName("nvidia.com/gpu"), "nvidia.com/gpu");
  EXPECT_EQ(*QualifyResourceName("mig-1g.5gb"), "nvidia.com/mig-1g.5gb");
  EXPECT_EQ(*QualifyResourceName("gpu.shared"), "nvidia.com/gpu.shared");
  // 52 characters after the prefix make exactly 63.
  const std::string longest(52, 'a');
  EXPECT_TRUE(QualifyResourceName(longest).ok());
  EXPECT_FALSE(QualifyResourceName(longest + "a").ok());
}

TEST(NamesTest, QualifyResourceNameRefusesWhatNvidiaRefuses) {
  for (const char* bad :
       {"", "GPU", "a_b", "-gpu", "gpu-", "a..b", "example.com/gpu",
        "nvidia.com/", "nvidia.com/a/b", "gpu ", "ü"}) {
    EXPECT_FALSE(QualifyResourceName(bad).ok()) << bad;
  }
}

TEST(NamesTest, CheckQualifiedResourceName) {
  EXPECT_TRUE(CheckQualifiedResourceName("nvidia.com/gpu").ok());
  EXPECT_FALSE(CheckQualifiedResourceName("gpu").ok());
  EXPECT_FALSE(CheckQualifiedResourceName("nvidia.com/Gpu").ok());
}

TEST(NamesTest, ClassifyDeviceRef) {
  const std::string uuid = "b1028956-cfa2-0990-bf4a-5da9abb51763";
  const std::pair<std::string, DeviceRefKind> cases[] = {
      {"0", DeviceRefKind::kGpuIndex},
      {"15", DeviceRefKind::kGpuIndex},
      {"0:1", DeviceRefKind::kMigIndex},
      {"GPU-" + uuid, DeviceRefKind::kGpuUuid},
      {"GPU-b1028956cfa20990bf4a5da9abb51763", DeviceRefKind::kGpuUuid},
      {"MIG-" + uuid, DeviceRefKind::kMigUuid},
      {"MIG-GPU-" + uuid + "/3/0", DeviceRefKind::kMigUuid},
      {"", DeviceRefKind::kInvalid},
      {"-1", DeviceRefKind::kInvalid},
      {"0:", DeviceRefKind::kInvalid},
      {"0:1:2", DeviceRefKind::kInvalid},
      {"a:1", DeviceRefKind::kInvalid},
      {"GPU-", DeviceRefKind::kInvalid},
      {"GPU-" + uuid + "0", DeviceRefKind::kInvalid},
      {"GPU-b1028956-cfa2-0990-bf4a-5da9abb5176g", DeviceRefKind::kInvalid},
      {"gpu-" + uuid, DeviceRefKind::kInvalid},
      {"MIG-GPU-" + uuid + "/3", DeviceRefKind::kInvalid},
      {"MIG-GPU-" + uuid + "/x/0", DeviceRefKind::kInvalid},
      {"MIG-" + uuid + "/3/0", DeviceRefKind::kInvalid},
      {"12345678901", DeviceRefKind::kInvalid},  // not a plausible index
  };
  for (const auto& [ref, kind] : cases) {
    EXPECT_EQ(ClassifyDeviceRef(ref), kind) << ref;
  }
}

TEST(NamesTest, CdiAnnotationPrefix) {
  EXPECT_TRUE(CheckCdiAnnotationPrefix("cdi.k8s.io/").ok());
  EXPECT_TRUE(CheckCdiAnnotationPrefix("nvidia.cdi.k8s.io/").ok());
  for (const char* bad : {"", "/", "cdi.k8s.io", "CDI.k8s.io/", "cdi.k8s.io//",
                          "a/b/", "cdi_k8s.io/"}) {
    EXPECT_FALSE(CheckCdiAnnotationPrefix(bad).ok()) << bad;
  }
}

TEST(NamesTest, DnsSubdomain) {
  EXPECT_TRUE(IsDnsSubdomain("a"));
  EXPECT_TRUE(IsDnsSubdomain("a-b.c9"));
  EXPECT_FALSE(IsDnsSubdomain(std::string(254, 'a')));
  EXPECT_FALSE(IsDnsSubdomain("a."));
  EXPECT_FALSE(IsDnsSubdomain(".a"));
}

TEST(ConfigTest, SharingStrategyAndAdvertisedName) {
  Sharing sharing;
  EXPECT_EQ(sharing.Strategy(), SharingStrategy::kNone);
  EXPECT_EQ(sharing.Active(), nullptr);
  sharing.time_slicing = ReplicatedResources{};
  EXPECT_EQ(sharing.Strategy(), SharingStrategy::kTimeSlicing);
  sharing.mps = ReplicatedResources{};
  EXPECT_EQ(sharing.Strategy(), SharingStrategy::kMps);
  EXPECT_EQ(sharing.Active(), &*sharing.mps);

  ReplicatedResources section;
  ReplicatedResource r{"nvidia.com/gpu", "", {}, 2};
  EXPECT_EQ(AdvertisedName(section, r), "nvidia.com/gpu");
  section.rename_by_default = true;
  EXPECT_EQ(AdvertisedName(section, r), "nvidia.com/gpu.shared");
  r.rename = "nvidia.com/shared-gpu";
  EXPECT_EQ(AdvertisedName(section, r), "nvidia.com/shared-gpu");
}

TEST(ConfigTest, EnumNamesRoundTrip) {
  EXPECT_EQ(ToString(MigStrategy::kMixed), "mixed");
  EXPECT_EQ(ToString(DeviceListStrategy::kVolumeMounts), "volume-mounts");
  EXPECT_EQ(ToString(DeviceIdStrategy::kIndex), "index");
  EXPECT_EQ(ToString(SharedDevicesAllocationPolicy::kPacked), "packed");
  EXPECT_EQ(ToString(DeviceDiscoveryStrategy::kNvml), "nvml");
  EXPECT_EQ((Origin{"f.yaml", 3, 5}).ToString(), "f.yaml:3:5");
  EXPECT_EQ((Origin{"flag --x"}).ToString(), "flag --x");
}

}  // namespace
}  // namespace gpulet::config
