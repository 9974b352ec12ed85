// The built-in machine profiles with MIG: their MIG devices' profiles, and
// the model tables' MIG profile names as NVIDIA derives them.
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/gpu_models.h"
#include "sim/profiles.h"
#include "sim/testing/machine_checks.h"

namespace gpulet::sim {
namespace {

using test_machines::DerivedName;
using test_machines::LinksOfType;
using test_machines::Load;
using test_machines::MigProfileNames;
using ::testing::ElementsAre;
using ::testing::StartsWith;

TEST(ProfilesTest, A100MigMixed) {
  Machine m = Load("a100-mig");
  ASSERT_EQ(m.gpus.size(), 4u);
  EXPECT_THAT(MigProfileNames(m.gpus[0]),
              ElementsAre("3g.20gb", "2g.10gb", "1g.5gb"));
  EXPECT_EQ(m.gpus[1].mig_devices.size(), 7u);
  EXPECT_THAT(MigProfileNames(m.gpus[2]), ElementsAre("3g.20gb", "3g.20gb"));
  EXPECT_TRUE(m.gpus[3].mig_capable);
  EXPECT_FALSE(m.gpus[3].mig_enabled);
  EXPECT_TRUE(m.gpus[3].mig_devices.empty());
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(m.gpus[i].mig_enabled);
  const MigDevice& d = m.gpus[0].mig_devices[1];
  EXPECT_EQ(d.gi_placement_start, 4u);
  EXPECT_EQ(d.gi_placement_size, 2u);
  EXPECT_EQ(d.compute_instance_profile_id,
            static_cast<unsigned>(NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE));
  EXPECT_THAT(d.uuid, StartsWith("MIG-"));
  // Direct NVLinks: four to each other GPU, listed on both ends.
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(m.gpus[i].nvlinks.size(), 12u);
    EXPECT_EQ(LinksOfType(m.gpus[i], NVML_NVLINK_DEVICE_TYPE_GPU), 12u);
  }
}

TEST(ProfilesTest, A100MigSingle) {
  Machine m = Load("a100-mig-single");
  ASSERT_EQ(m.gpus.size(), 2u);
  for (const Gpu& g : m.gpus) {
    EXPECT_TRUE(g.mig_enabled);
    EXPECT_THAT(MigProfileNames(g),
                ElementsAre("1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb",
                            "1g.5gb", "1g.5gb"));
  }
}

TEST(ProfilesTest, B200Mig) {
  Machine m = Load("b200-mig");
  ASSERT_EQ(m.gpus.size(), 8u);
  EXPECT_THAT(MigProfileNames(m.gpus[0]),
              ElementsAre("3g.90gb", "2g.45gb", "1g.23gb"));
  EXPECT_EQ(m.gpus[1].mig_devices.size(), 7u);
  EXPECT_THAT(MigProfileNames(m.gpus[2]),
              ElementsAre("1g.45gb", "1g.45gb", "1g.45gb", "1g.23gb+me"));
  EXPECT_THAT(MigProfileNames(m.gpus[3]), ElementsAre("7g.180gb"));
  for (size_t i = 4; i < 8; ++i) {
    EXPECT_TRUE(m.gpus[i].mig_capable);
    EXPECT_FALSE(m.gpus[i].mig_enabled);
  }
}

// Every GPU instance profile NVML 13 added (0xA-0x10) but the 3-slice
// graphics one, which the guide lists for no GPU yet, is offered; the
// machine uses the attribute profiles on every GPU.
TEST(ProfilesTest, RtxPro6000MigUsesTheNewProfiles) {
  Machine m = Load("rtx-pro-6000-mig");
  ASSERT_EQ(m.gpus.size(), 4u);
  std::set<unsigned> ids;
  for (const GpuInstanceProfile& p : m.gpus[0].gi_profiles) ids.insert(p.id);
  for (unsigned id = NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX;
       id <= NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME; ++id) {
    EXPECT_EQ(ids.count(id), 1u) << id;
  }
  EXPECT_EQ(m.gpus[0].max_mig_devices, 4u);
  EXPECT_THAT(MigProfileNames(m.gpus[0]),
              ElementsAre("1g.24gb-me", "1g.24gb-me", "2g.48gb+me.all"));
  EXPECT_THAT(MigProfileNames(m.gpus[1]),
              ElementsAre("1g.24gb+gfx", "1g.24gb+me.all", "2g.48gb-me"));
  EXPECT_THAT(MigProfileNames(m.gpus[2]),
              ElementsAre("2g.48gb+gfx", "1g.24gb", "1g.24gb+me"));
  EXPECT_THAT(MigProfileNames(m.gpus[3]), ElementsAre("4g.96gb+gfx"));
  for (const Gpu& g : m.gpus) {
    EXPECT_TRUE(g.nvlinks.empty());
    EXPECT_EQ(g.cc_major, 12);
  }
}

TEST(GpuModelsTest, MigTablesMatchNvidiaNaming) {
  for (const GpuModel& model : GpuModels()) {
    SCOPED_TRACE(model.key);
    Gpu gpu;
    gpu.memory_total = model.memory_total;
    for (const GpuInstanceProfile& p : model.gi_profiles) {
      EXPECT_EQ(DerivedName(gpu, p), p.name);
      EXPECT_FALSE(p.placement_starts.empty());
      EXPECT_LE(p.instance_count, p.placement_starts.size());
    }
    EXPECT_EQ(model.mig_capable, !model.gi_profiles.empty());
  }
}

}  // namespace
}  // namespace gpulet::sim
