#include "src/model/allocation/allocate_cdi.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>

namespace gpulet::allocation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(CdiNamesTest, VendorAndClass) {
  for (const char* ok : {"nvidia.com", "k8s.device-plugin.nvidia.com", "gpu",
                         "imex-channel", "a", "a_b", "x9"}) {
    EXPECT_TRUE(ValidateCdiVendorOrClass("vendor", ok).ok()) << ok;
  }
  for (const char* bad :
       {"", "9nvidia", "-a", "nvidia.com.", "a/b", "a=b", "a b", "a:b"}) {
    absl::Status s = ValidateCdiVendorOrClass("class", bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(std::string("class \"") + bad + "\""));
  }
}

TEST(CdiNamesTest, DeviceName) {
  for (const char* ok : {"GPU-8a2b", "MIG-1c2d", "0", "0:1", "all", "a.b_c"}) {
    EXPECT_TRUE(ValidateCdiDeviceName(ok).ok()) << ok;
  }
  for (const char* bad : {"", "-0", "0:", ":0", "a b", "a/b", "a=b"}) {
    EXPECT_EQ(ValidateCdiDeviceName(bad).code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(CdiNamesTest, QualifiedName) {
  EXPECT_EQ(CdiQualifiedName("nvidia.com", "gpu", "0:1"), "nvidia.com/gpu=0:1");
}

TEST(AllocationUidTest, UuidShapedVersion8) {
  const std::regex shape(
      "[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  for (const auto& ids : std::vector<std::vector<std::string>>{
           {}, {"GPU-a"}, {"GPU-a", "GPU-b"}, {"MIG-x::3"}}) {
    const std::string uid = AllocationUid("nvidia.com/gpu", ids);
    EXPECT_TRUE(std::regex_match(uid, shape)) << uid;
  }
}

TEST(AllocationUidTest, SetOfIdsAndResourceDecide) {
  EXPECT_EQ(AllocationUid("r", {"a", "b", "a"}),
            AllocationUid("r", {"b", "a"}));
  EXPECT_NE(AllocationUid("r", {"ab", "c"}), AllocationUid("r", {"a", "bc"}));
  EXPECT_NE(AllocationUid("r", {"a"}), AllocationUid("s", {"a"}));
  // Pinned so that a change to the derivation is a deliberate one.
  EXPECT_EQ(AllocationUid("nvidia.com/gpu", {"GPU-a"}),
            "70d38d19-0828-8be3-97df-61d70d60e978");
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    seen.insert(AllocationUid("nvidia.com/gpu", {"GPU-" + std::to_string(i)}));
  }
  EXPECT_EQ(seen.size(), 2000u);
}

TEST(CdiAnnotationKeyTest, NvidiaShape) {
  absl::StatusOr<std::string> key =
      CdiAnnotationKey("cdi.k8s.io/", "nvidia-device-plugin",
                       "1c3f7b2e-0000-8000-8000-000000000000");
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(*key,
            "cdi.k8s.io/nvidia-device-plugin_1c3f7b2e-0000-8000-8000-"
            "000000000000");
  key = CdiAnnotationKey("custom/", "p", "a/b");
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(*key, "custom/p_a_b");
}

TEST(CdiAnnotationKeyTest, CdiLibraryRules) {
  EXPECT_FALSE(CdiAnnotationKey("p/", "", "id").ok());
  EXPECT_FALSE(CdiAnnotationKey("p/", "plugin", "").ok());
  EXPECT_FALSE(CdiAnnotationKey("p/", "-plugin", "id").ok());
  EXPECT_FALSE(CdiAnnotationKey("p/", "plugin", "id-").ok());
  EXPECT_FALSE(CdiAnnotationKey("p/", "plug in", "id").ok());
  EXPECT_TRUE(CdiAnnotationKey("p/", std::string(30, 'p'), std::string(32, 'i'))
                  .ok());  // 63
  absl::StatusOr<std::string> long_key =
      CdiAnnotationKey("p/", std::string(30, 'p'), std::string(33, 'i'));
  EXPECT_THAT(std::string(long_key.status().message()),
              HasSubstr("longer than 63"));
}

TEST(AdditionalCdiDevicesTest, NvidiaOrder) {
  EXPECT_THAT(AdditionalCdiDevices("nvidia.com", false, false, false),
              IsEmpty());
  EXPECT_THAT(
      AdditionalCdiDevices("v.io", true, true, true),
      ElementsAre("v.io/gdrcopy=all", "v.io/gds=all", "v.io/mofed=all"));
  EXPECT_THAT(AdditionalCdiDevices("v.io", false, true, true),
              ElementsAre("v.io/gds=all", "v.io/mofed=all"));
}

}  // namespace
}  // namespace gpulet::allocation
