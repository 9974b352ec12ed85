// ABI tests: MIG mode, MIG device handles, GPU and compute instances, the
// way NVIDIA's device plugin and go-nvlib walk them.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/machine_queries.h"
#include "sim/testing/abi_test_util.h"

namespace gpulet::sim::testing {
namespace {

using AbiMigTest = SimTest;

constexpr unsigned long long kMiB = 1024ULL * 1024ULL;

// go-nvlib's VisitMigDevices: 0..max-1, skipping empty slots.
std::vector<nvmlDevice_t> WalkMigDevices(const NvmlApi& nvml,
                                         nvmlDevice_t gpu) {
  std::vector<nvmlDevice_t> found;
  unsigned int max = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetMaxMigDeviceCount(gpu, &max), NVML_SUCCESS);
  for (unsigned int i = 0; i < max; ++i) {
    nvmlDevice_t mig = nullptr;
    nvmlReturn_t r = nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, i, &mig);
    if (r == NVML_ERROR_NOT_FOUND) continue;
    EXPECT_EQ(r, NVML_SUCCESS) << "slot " << i;
    found.push_back(mig);
  }
  return found;
}

TEST_F(AbiMigTest, ModesAndCounts) {
  Machine m = Init("a100-mig");
  unsigned int current = 9, pending = 9, max = 9;
  ASSERT_EQ(nvml().nvmlDeviceGetMigMode(Device(0), &current, &pending),
            NVML_SUCCESS);
  EXPECT_EQ(current, static_cast<unsigned>(NVML_DEVICE_MIG_ENABLE));
  ASSERT_EQ(nvml().nvmlDeviceGetMaxMigDeviceCount(Device(0), &max),
            NVML_SUCCESS);
  EXPECT_EQ(max, m.gpus[0].max_mig_devices);
  // GPU 3 is MIG-capable with MIG disabled.
  ASSERT_EQ(nvml().nvmlDeviceGetMigMode(Device(3), &current, &pending),
            NVML_SUCCESS);
  EXPECT_EQ(current, static_cast<unsigned>(NVML_DEVICE_MIG_DISABLE));
  ASSERT_EQ(nvml().nvmlDeviceGetMaxMigDeviceCount(Device(3), &max),
            NVML_SUCCESS);
  EXPECT_EQ(max, 0u);
  nvmlDevice_t mig = nullptr;
  EXPECT_EQ(nvml().nvmlDeviceGetMigDeviceHandleByIndex(Device(3), 0, &mig),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml().nvmlDeviceGetMigDeviceHandleByIndex(Device(0), 7, &mig),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(AbiMigTest, MigDevicesMatchTheMachine) {
  Machine m = Init("a100-mig");
  for (unsigned int g = 0; g < m.gpus.size(); ++g) {
    SCOPED_TRACE(g);
    const Gpu& gpu = m.gpus[g];
    nvmlDevice_t parent = Device(g);
    std::vector<nvmlDevice_t> migs = WalkMigDevices(nvml(), parent);
    ASSERT_EQ(migs.size(), gpu.mig_enabled ? gpu.mig_devices.size() : 0u);
    for (size_t j = 0; j < migs.size(); ++j) {
      const MigDevice& want = gpu.mig_devices[j];
      nvmlDevice_t mig = migs[j];
      EXPECT_EQ(Uuid(mig), want.uuid);
      char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
      ASSERT_EQ(nvml().nvmlDeviceGetName(mig, name, sizeof(name)),
                NVML_SUCCESS);
      EXPECT_EQ(name, MigDeviceName(gpu, want));
      EXPECT_THAT(name, ::testing::StartsWith(gpu.name + " MIG "));
      unsigned int value = 0;
      ASSERT_EQ(nvml().nvmlDeviceIsMigDeviceHandle(mig, &value), NVML_SUCCESS);
      EXPECT_EQ(value, 1u);
      ASSERT_EQ(nvml().nvmlDeviceGetGpuInstanceId(mig, &value), NVML_SUCCESS);
      EXPECT_EQ(value, want.gpu_instance_id);
      ASSERT_EQ(nvml().nvmlDeviceGetComputeInstanceId(mig, &value),
                NVML_SUCCESS);
      EXPECT_EQ(value, want.compute_instance_id);
      nvmlDevice_t back = nullptr;
      ASSERT_EQ(nvml().nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, &back),
                NVML_SUCCESS);
      EXPECT_EQ(back, parent);
      nvmlDevice_t by_uuid = nullptr;
      ASSERT_EQ(nvml().nvmlDeviceGetHandleByUUID(want.uuid.c_str(), &by_uuid),
                NVML_SUCCESS);
      EXPECT_EQ(by_uuid, mig);
      const GpuInstanceProfile* gi =
          FindGiProfile(gpu, want.gpu_instance_profile_id);
      ASSERT_NE(gi, nullptr);
      nvmlMemory_t memory;
      ASSERT_EQ(nvml().nvmlDeviceGetMemoryInfo(mig, &memory), NVML_SUCCESS);
      EXPECT_EQ(memory.total, gi->memory_size_mb * kMiB);
      nvmlDeviceAttributes_t attributes;
      ASSERT_EQ(nvml().nvmlDeviceGetAttributes_v2(mig, &attributes),
                NVML_SUCCESS);
      EXPECT_EQ(attributes.gpuInstanceSliceCount, gi->slice_count);
      EXPECT_EQ(attributes.computeInstanceSliceCount, want.ci_placement_size);
      EXPECT_EQ(attributes.memorySizeMB, gi->memory_size_mb);
      EXPECT_EQ(attributes.sharedCopyEngineCount, gi->copy_engine_count);
      nvmlPciInfo_t pci;  // a MIG device reports its parent's PCI address
      ASSERT_EQ(nvml().nvmlDeviceGetPciInfo_v3(mig, &pci), NVML_SUCCESS);
      EXPECT_EQ(pci.busId, gpu.bus_id);
    }
  }
}

TEST_F(AbiMigTest, GpuAndComputeInstances) {
  Machine m = Init("a100-mig");
  const Gpu& gpu = m.gpus[0];
  const MigDevice& want = gpu.mig_devices[0];
  const GpuInstanceProfile* profile =
      FindGiProfile(gpu, want.gpu_instance_profile_id);
  ASSERT_NE(profile, nullptr);
  nvmlGpuInstance_t gi = nullptr;
  ASSERT_EQ(
      nvml().nvmlDeviceGetGpuInstanceById(Device(0), want.gpu_instance_id, &gi),
      NVML_SUCCESS);
  nvmlGpuInstanceInfo_t gi_info;
  ASSERT_EQ(nvml().nvmlGpuInstanceGetInfo(gi, &gi_info), NVML_SUCCESS);
  EXPECT_EQ(gi_info.device, Device(0));
  EXPECT_EQ(gi_info.id, want.gpu_instance_id);
  EXPECT_EQ(gi_info.profileId, profile->profile_id);
  EXPECT_EQ(gi_info.placement.start, want.gi_placement_start);
  EXPECT_EQ(gi_info.placement.size, want.gi_placement_size);
  nvmlComputeInstance_t ci = nullptr;
  ASSERT_EQ(nvml().nvmlGpuInstanceGetComputeInstanceById(
                gi, want.compute_instance_id, &ci),
            NVML_SUCCESS);
  nvmlComputeInstanceInfo_t ci_info;
  ASSERT_EQ(nvml().nvmlComputeInstanceGetInfo_v2(ci, &ci_info), NVML_SUCCESS);
  EXPECT_EQ(ci_info.device, Device(0));
  EXPECT_EQ(ci_info.gpuInstance, gi);
  EXPECT_EQ(ci_info.id, want.compute_instance_id);
  EXPECT_EQ(ci_info.profileId, want.compute_instance_profile_id);
  EXPECT_EQ(ci_info.placement.size, want.ci_placement_size);
  // Ids that name nothing.
  EXPECT_EQ(nvml().nvmlDeviceGetGpuInstanceById(Device(0), 99, &gi),
            NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvml().nvmlGpuInstanceGetComputeInstanceById(gi, 42, &ci),
            NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvml().nvmlDeviceGetGpuInstanceById(Device(3), 0, &gi),
            NVML_ERROR_NOT_SUPPORTED);  // MIG disabled
}

TEST_F(AbiMigTest, ProfileInfo) {
  Machine m = Init("a100-mig");
  const Gpu& gpu = m.gpus[0];
  int supported = 0;
  for (unsigned int p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlGpuInstanceProfileInfo_t info;
    nvmlReturn_t r =
        nvml().nvmlDeviceGetGpuInstanceProfileInfo(Device(0), p, &info);
    const GpuInstanceProfile* want = FindGiProfile(gpu, p);
    if (want == nullptr) {
      EXPECT_EQ(r, NVML_ERROR_NOT_SUPPORTED) << p;
      continue;
    }
    ++supported;
    ASSERT_EQ(r, NVML_SUCCESS) << p;
    EXPECT_EQ(info.id, want->profile_id);
    EXPECT_EQ(info.sliceCount, want->slice_count);
    EXPECT_EQ(info.memorySizeMB, want->memory_size_mb);
    nvmlGpuInstanceProfileInfo_v2_t v2{};
    v2.version = nvmlGpuInstanceProfileInfo_v2;
    ASSERT_EQ(nvml().nvmlDeviceGetGpuInstanceProfileInfoV(Device(0), p, &v2),
              NVML_SUCCESS);
    EXPECT_EQ(v2.name, "MIG " + want->name);
    EXPECT_EQ(v2.instanceCount, want->instance_count);
  }
  EXPECT_EQ(static_cast<size_t>(supported), gpu.gi_profiles.size());
  nvmlGpuInstanceProfileInfo_t info;
  EXPECT_EQ(nvml().nvmlDeviceGetGpuInstanceProfileInfo(
                Device(0), NVML_GPU_INSTANCE_PROFILE_COUNT, &info),
            NVML_ERROR_INVALID_ARGUMENT);
  nvmlGpuInstanceProfileInfo_v2_t v2{};
  v2.version = nvmlGpuInstanceProfileInfo_v2 + 1;
  EXPECT_EQ(nvml().nvmlDeviceGetGpuInstanceProfileInfoV(
                Device(0), NVML_GPU_INSTANCE_PROFILE_1_SLICE, &v2),
            NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
}

TEST_F(AbiMigTest, ComputeInstanceProfilesFitTheirGpuInstance) {
  Machine m = Init("a100-mig");
  const MigDevice& three_g = m.gpus[0].mig_devices[0];  // 3g.20gb
  nvmlGpuInstance_t gi = nullptr;
  ASSERT_EQ(nvml().nvmlDeviceGetGpuInstanceById(Device(0),
                                                three_g.gpu_instance_id, &gi),
            NVML_SUCCESS);
  nvmlComputeInstanceProfileInfo_t info;
  ASSERT_EQ(nvml().nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info),
            NVML_SUCCESS);
  EXPECT_EQ(info.sliceCount, 1u);
  EXPECT_EQ(info.instanceCount, 3u);
  EXPECT_EQ(nvml().nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi, NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE,
                NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml().nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi, NVML_COMPUTE_INSTANCE_PROFILE_COUNT, 0, &info),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi, 0, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT, &info),
            NVML_ERROR_INVALID_ARGUMENT);
  nvmlComputeInstanceProfileInfo_v2_t v2{};
  v2.version = nvmlComputeInstanceProfileInfo_v2;
  ASSERT_EQ(nvml().nvmlGpuInstanceGetComputeInstanceProfileInfoV(
                gi, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, 0, &v2),
            NVML_SUCCESS);
  EXPECT_EQ(v2.sliceCount, 3u);
  EXPECT_STREQ(v2.name, "MIG 3g.20gb");
  v2.version = 0;
  EXPECT_EQ(nvml().nvmlGpuInstanceGetComputeInstanceProfileInfoV(
                gi, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, 0, &v2),
            NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
}

TEST_F(AbiMigTest, MigCallsOnGpusWithoutMig) {
  Init("pcie-t4");
  nvmlDevice_t d = Device(0);
  unsigned int current = 0, pending = 0, max = 9;
  EXPECT_EQ(nvml().nvmlDeviceGetMigMode(d, &current, &pending),
            NVML_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(nvml().nvmlDeviceGetMaxMigDeviceCount(d, &max), NVML_SUCCESS);
  EXPECT_EQ(max, 0u);
  nvmlDevice_t mig = nullptr;
  EXPECT_EQ(nvml().nvmlDeviceGetMigDeviceHandleByIndex(d, 0, &mig),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuInstanceProfileInfo_t info;
  EXPECT_EQ(nvml().nvmlDeviceGetGpuInstanceProfileInfo(d, 0, &info),
            NVML_ERROR_NOT_SUPPORTED);
  unsigned int is_mig = 9, id = 0;
  ASSERT_EQ(nvml().nvmlDeviceIsMigDeviceHandle(d, &is_mig), NVML_SUCCESS);
  EXPECT_EQ(is_mig, 0u);
  EXPECT_EQ(nvml().nvmlDeviceGetGpuInstanceId(d, &id),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlDeviceAttributes_t attributes;
  EXPECT_EQ(nvml().nvmlDeviceGetAttributes_v2(d, &attributes),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml().nvmlDeviceGetDeviceHandleFromMigDeviceHandle(d, &mig),
            NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(AbiMigTest, WholeGpuCallsOnMigHandles) {
  Init("a100-mig");
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(nvml().nvmlDeviceGetMigDeviceHandleByIndex(Device(1), 0, &mig),
            NVML_SUCCESS);
  unsigned int value = 0;
  EXPECT_EQ(nvml().nvmlDeviceGetIndex(mig, &value), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml().nvmlDeviceGetMinorNumber(mig, &value),
            NVML_ERROR_NOT_SUPPORTED);
  unsigned int current = 0, pending = 0;
  EXPECT_EQ(nvml().nvmlDeviceGetMigMode(mig, &current, &pending),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlEnableState_t state;
  EXPECT_EQ(nvml().nvmlDeviceGetNvLinkState(mig, 0, &state),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuTopologyLevel_t level;
  EXPECT_EQ(nvml().nvmlDeviceGetTopologyCommonAncestor(mig, Device(0), &level),
            NVML_ERROR_NOT_SUPPORTED);
  unsigned long long events = 0;
  EXPECT_EQ(nvml().nvmlDeviceGetSupportedEventTypes(mig, &events),
            NVML_ERROR_NOT_SUPPORTED);
}

}  // namespace
}  // namespace gpulet::sim::testing
