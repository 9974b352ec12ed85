#include "src/gpu/device/mig_profile.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::device {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

struct NameCase {
  const char* gpu;
  uint64_t device_mib;  // nvmlDeviceGetMemoryInfo total, in MiB
  unsigned gi_slices;
  unsigned ci_slices;
  uint64_t mig_mib;        // nvmlDeviceAttributes_t::memorySizeMB
  unsigned gi_profile_id;  // NVML_GPU_INSTANCE_PROFILE_*
  const char* want;
};

// Memory figures as the drivers report them (nvidia-smi mig -lgip).
const NameCase kNameCases[] = {
    {"A100-SXM4-40GB", 40960, 1, 1, 4864, NVML_GPU_INSTANCE_PROFILE_1_SLICE,
     "1g.5gb"},
    {"A100-SXM4-40GB", 40960, 2, 2, 9856, NVML_GPU_INSTANCE_PROFILE_2_SLICE,
     "2g.10gb"},
    {"A100-SXM4-40GB", 40960, 3, 3, 19968, NVML_GPU_INSTANCE_PROFILE_3_SLICE,
     "3g.20gb"},
    {"A100-SXM4-40GB", 40960, 4, 4, 19968, NVML_GPU_INSTANCE_PROFILE_4_SLICE,
     "4g.20gb"},
    {"A100-SXM4-40GB", 40960, 7, 7, 40192, NVML_GPU_INSTANCE_PROFILE_7_SLICE,
     "7g.40gb"},
    {"A100-SXM4-40GB", 40960, 2, 1, 9856, NVML_GPU_INSTANCE_PROFILE_2_SLICE,
     "1c.2g.10gb"},
    {"A100-SXM4-40GB", 40960, 7, 3, 40192, NVML_GPU_INSTANCE_PROFILE_7_SLICE,
     "3c.7g.40gb"},
    {"A100-SXM4-40GB", 40960, 1, 1, 4864,
     NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, "1g.5gb+me"},
    {"A100-SXM4-80GB", 81920, 1, 1, 9728, NVML_GPU_INSTANCE_PROFILE_1_SLICE,
     "1g.10gb"},
    {"A100-SXM4-80GB", 81920, 1, 1, 19968,
     NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, "1g.20gb"},
    {"A100-SXM4-80GB", 81920, 2, 2, 19968, NVML_GPU_INSTANCE_PROFILE_2_SLICE,
     "2g.20gb"},
    {"A100-SXM4-80GB", 81920, 3, 3, 40192, NVML_GPU_INSTANCE_PROFILE_3_SLICE,
     "3g.40gb"},
    {"A100-SXM4-80GB", 81920, 7, 7, 80384, NVML_GPU_INSTANCE_PROFILE_7_SLICE,
     "7g.80gb"},
    {"H100 80GB HBM3", 81559, 1, 1, 9856, NVML_GPU_INSTANCE_PROFILE_1_SLICE,
     "1g.10gb"},
    {"H100 80GB HBM3", 81559, 1, 1, 9856,
     NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, "1g.10gb+me"},
    {"H100 80GB HBM3", 81559, 1, 1, 20096,
     NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, "1g.20gb"},
    {"H100 80GB HBM3", 81559, 2, 2, 20096, NVML_GPU_INSTANCE_PROFILE_2_SLICE,
     "2g.20gb"},
    {"H100 80GB HBM3", 81559, 3, 3, 40320, NVML_GPU_INSTANCE_PROFILE_3_SLICE,
     "3g.40gb"},
    {"H100 80GB HBM3", 81559, 4, 4, 40320, NVML_GPU_INSTANCE_PROFILE_4_SLICE,
     "4g.40gb"},
    {"H100 80GB HBM3", 81559, 7, 7, 80768, NVML_GPU_INSTANCE_PROFILE_7_SLICE,
     "7g.80gb"},
    {"A30-24GB", 24576, 1, 1, 5836, NVML_GPU_INSTANCE_PROFILE_1_SLICE,
     "1g.6gb"},
    {"A30-24GB", 24576, 2, 2, 11672, NVML_GPU_INSTANCE_PROFILE_2_SLICE,
     "2g.12gb"},
    {"A30-24GB", 24576, 4, 4, 23344, NVML_GPU_INSTANCE_PROFILE_4_SLICE,
     "4g.24gb"},
    // NVIDIA's MIG guide, B200 and RTX PRO 6000 Blackwell tables.
    {"B200", 183359, 1, 1, 22272, NVML_GPU_INSTANCE_PROFILE_1_SLICE, "1g.23gb"},
    {"B200", 183359, 1, 1, 44800, NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2,
     "1g.45gb"},
    {"B200", 183359, 7, 7, 180480, NVML_GPU_INSTANCE_PROFILE_7_SLICE,
     "7g.180gb"},
    {"RTX PRO 6000", 97887, 1, 1, 24064,
     NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, "1g.24gb-me"},
    {"RTX PRO 6000", 97887, 1, 1, 24064,
     NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, "1g.24gb+me.all"},
    {"RTX PRO 6000", 97887, 1, 1, 24064, NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX,
     "1g.24gb+gfx"},
    {"RTX PRO 6000", 97887, 2, 2, 48896,
     NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME, "2g.48gb-me"},
    {"RTX PRO 6000", 97887, 2, 2, 48896,
     NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME, "2g.48gb+me.all"},
    {"RTX PRO 6000", 97887, 2, 2, 48896, NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX,
     "2g.48gb+gfx"},
    {"RTX PRO 6000", 97887, 4, 4, 97280, NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX,
     "4g.96gb+gfx"},
    {"RTX PRO 6000", 97887, 2, 1, 48896,
     NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME, "1c.2g.48gb-me"},
};

TEST(MigProfileNameTest, MatchesNvidiaNames) {
  for (const NameCase& c : kNameCases) {
    EXPECT_EQ(
        MigProfileName(c.gi_slices, c.ci_slices, c.mig_mib, c.device_mib * kMiB,
                       MigProfileAttributes(c.gi_profile_id)),
        c.want)
        << c.gpu << " gi=" << c.gi_slices << " ci=" << c.ci_slices
        << " mem=" << c.mig_mib;
  }
}

// The rounding rule restated: the MIG memory, rounded up to the next eighth
// of the GPU, in GB. Checked over a fine grid like NVIDIA's own test.
TEST(MigMemorySizeGbTest, RoundsUpToEighthsOfTheGpu) {
  for (uint64_t total_gb : {24u, 40u, 80u}) {
    const uint64_t total = total_gb * kGiB;
    const uint64_t slice = total / 8;
    for (uint64_t mem = kGiB / 32; mem <= total; mem += kGiB / 32) {
      uint64_t want = 0;
      for (uint64_t j = slice; j <= total; j += slice) {
        if (mem <= j) {
          want = j / kGiB;
          break;
        }
      }
      EXPECT_EQ(MigMemorySizeGb(total, mem / kMiB), want)
          << "total " << total_gb << "GB, mig " << mem / kMiB << "MiB";
    }
  }
}

TEST(MigMemorySizeGbTest, ZeroDeviceMemoryIsZero) {
  EXPECT_EQ(MigMemorySizeGb(0, 4864), 0u);
}

TEST(MigProfileNameTest, JoinsSeveralAttributes) {
  EXPECT_EQ(MigProfileName(1, 1, 4864, 40960 * kMiB, {"me", "gfx"}),
            "1g.5gb+me,gfx");
}

TEST(MigProfileNameTest, AbsentAttributesWinOverPresentOnes) {
  EXPECT_EQ(MigProfileName(1, 1, 4864, 40960 * kMiB, {"-me"}), "1g.5gb-me");
  EXPECT_EQ(MigProfileName(1, 1, 4864, 40960 * kMiB, {"gfx", "-me"}),
            "1g.5gb-me");
}

// The profile indexes NVML 13 added, each with go-nvlib's attribute.
TEST(MigProfileAttributesTest, Api13Profiles) {
  using V = std::vector<std::string>;
  EXPECT_EQ(MigProfileAttributes(0xA), V{"gfx"});
  EXPECT_EQ(MigProfileAttributes(0xB), V{"gfx"});
  EXPECT_EQ(MigProfileAttributes(0xC), V{"gfx"});
  EXPECT_EQ(MigProfileAttributes(0xD), V{"-me"});
  EXPECT_EQ(MigProfileAttributes(0xE), V{"-me"});
  EXPECT_EQ(MigProfileAttributes(0xF), V{"me.all"});
  EXPECT_EQ(MigProfileAttributes(0x10), V{"me.all"});
  EXPECT_EQ(MigProfileAttributes(0x11), V{"gfx"});
  EXPECT_TRUE(MigProfileAttributes(0x12).empty());
  EXPECT_EQ(NVML_GPU_INSTANCE_PROFILE_COUNT, 0x12);
}

TEST(MigProfileAttributesTest, OnlyMediaExtensionProfilesHaveAttributes) {
  EXPECT_EQ(MigProfileAttributes(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1),
            std::vector<std::string>{"me"});
  EXPECT_EQ(MigProfileAttributes(NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1),
            std::vector<std::string>{"me"});
  EXPECT_TRUE(MigProfileAttributes(NVML_GPU_INSTANCE_PROFILE_1_SLICE).empty());
  EXPECT_TRUE(
      MigProfileAttributes(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2).empty());
  EXPECT_TRUE(MigProfileAttributes(NVML_GPU_INSTANCE_PROFILE_7_SLICE).empty());
}

}  // namespace
}  // namespace gpulet::device
