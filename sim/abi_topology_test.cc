// ABI tests: common ancestors, NVLinks (direct and through NVSwitches),
// peer-to-peer status and CPU affinity.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/testing/abi_test_util.h"

namespace gpulet::sim::testing {
namespace {

using AbiTopologyTest = SimTest;

nvmlGpuP2PStatus_t P2P(const NvmlApi& nvml, nvmlDevice_t a, nvmlDevice_t b,
                       nvmlGpuP2PCapsIndex_t index) {
  nvmlGpuP2PStatus_t status = NVML_P2P_STATUS_UNKNOWN;
  EXPECT_EQ(nvml.nvmlDeviceGetP2PStatus(a, b, index, &status), NVML_SUCCESS);
  return status;
}

TEST_F(AbiTopologyTest, CommonAncestorIsTheMachineMatrix) {
  Machine m = Init("dgx-h100");
  for (unsigned int i = 0; i < m.gpus.size(); ++i) {
    for (unsigned int j = 0; j < m.gpus.size(); ++j) {
      nvmlGpuTopologyLevel_t level;
      ASSERT_EQ(nvml().nvmlDeviceGetTopologyCommonAncestor(Device(i), Device(j),
                                                           &level),
                NVML_SUCCESS);
      EXPECT_EQ(level, m.topology[i][j]) << i << "," << j;
    }
  }
  EXPECT_EQ(
      nvml().nvmlDeviceGetTopologyCommonAncestor(Device(0), Device(1), nullptr),
      NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(AbiTopologyTest, NvSwitchLinks) {
  Machine m = Init("dgx-h100");
  const Gpu& gpu = m.gpus[0];
  ASSERT_FALSE(gpu.nvlinks.empty());
  for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t state;
    nvmlReturn_t r = nvml().nvmlDeviceGetNvLinkState(Device(0), link, &state);
    if (link >= gpu.nvlinks.size()) {
      EXPECT_EQ(r, NVML_ERROR_NOT_SUPPORTED) << link;
      continue;
    }
    ASSERT_EQ(r, NVML_SUCCESS) << link;
    EXPECT_EQ(state == NVML_FEATURE_ENABLED, gpu.nvlinks[link].active);
    nvmlIntNvLinkDeviceType_t type;
    ASSERT_EQ(
        nvml().nvmlDeviceGetNvLinkRemoteDeviceType(Device(0), link, &type),
        NVML_SUCCESS);
    EXPECT_EQ(type, gpu.nvlinks[link].remote_type);
    nvmlPciInfo_t pci;
    ASSERT_EQ(nvml().nvmlDeviceGetNvLinkRemotePciInfo_v2(Device(0), link, &pci),
              NVML_SUCCESS);
    EXPECT_EQ(pci.busId, gpu.nvlinks[link].remote_bus_id);
  }
  nvmlEnableState_t state;
  EXPECT_EQ(
      nvml().nvmlDeviceGetNvLinkState(Device(0), NVML_NVLINK_MAX_LINKS, &state),
      NVML_ERROR_INVALID_ARGUMENT);
  // Every pair shares the NVSwitch fabric.
  EXPECT_EQ(P2P(nvml(), Device(0), Device(7), NVML_P2P_CAPS_INDEX_NVLINK),
            NVML_P2P_STATUS_OK);
  EXPECT_EQ(P2P(nvml(), Device(0), Device(7), NVML_P2P_CAPS_INDEX_READ),
            NVML_P2P_STATUS_OK);
}

TEST_F(AbiTopologyTest, DirectLinksPointAtThePeer) {
  Machine m = Init("a100-mig");
  const Gpu& gpu = m.gpus[0];
  int links_to_gpu1 = 0;
  for (unsigned int link = 0; link < gpu.nvlinks.size(); ++link) {
    nvmlPciInfo_t pci;
    ASSERT_EQ(nvml().nvmlDeviceGetNvLinkRemotePciInfo_v2(Device(0), link, &pci),
              NVML_SUCCESS);
    if (std::string(pci.busId) == m.gpus[1].bus_id) {
      ++links_to_gpu1;
      EXPECT_EQ(pci.pciDeviceId, m.gpus[1].pci_device_id);
    }
  }
  EXPECT_GT(links_to_gpu1, 0);
  EXPECT_EQ(P2P(nvml(), Device(0), Device(1), NVML_P2P_CAPS_INDEX_NVLINK),
            NVML_P2P_STATUS_OK);
}

TEST_F(AbiTopologyTest, PcieOnlyMachine) {
  Init("pcie-t4");
  nvmlEnableState_t state;
  EXPECT_EQ(nvml().nvmlDeviceGetNvLinkState(Device(0), 0, &state),
            NVML_ERROR_NOT_SUPPORTED);
  // GPUs 0 and 1 share a PCIe switch; 0 and 2 sit on different sockets.
  EXPECT_EQ(P2P(nvml(), Device(0), Device(1), NVML_P2P_CAPS_INDEX_NVLINK),
            NVML_P2P_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(P2P(nvml(), Device(0), Device(1), NVML_P2P_CAPS_INDEX_READ),
            NVML_P2P_STATUS_OK);
  EXPECT_EQ(P2P(nvml(), Device(0), Device(2), NVML_P2P_CAPS_INDEX_WRITE),
            NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED);
  nvmlGpuP2PStatus_t status;
  EXPECT_EQ(nvml().nvmlDeviceGetP2PStatus(Device(0), Device(1),
                                          NVML_P2P_CAPS_INDEX_UNKNOWN, &status),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(AbiTopologyTest, SeparateNvSwitchFabricsDoNotShareNvLink) {
  Init("islands-16");
  EXPECT_EQ(P2P(nvml(), Device(0), Device(7), NVML_P2P_CAPS_INDEX_NVLINK),
            NVML_P2P_STATUS_OK);
  EXPECT_EQ(P2P(nvml(), Device(0), Device(8), NVML_P2P_CAPS_INDEX_NVLINK),
            NVML_P2P_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(P2P(nvml(), Device(0), Device(8), NVML_P2P_CAPS_INDEX_READ),
            NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED);
}

TEST_F(AbiTopologyTest, CpuAffinityMask) {
  Machine m = Init("dgx-h100");
  constexpr unsigned int kWords = 4;
  std::vector<unsigned long> want(kWords, 0);
  for (unsigned cpu : m.gpus[4].cpu_affinity) {
    if (cpu / 64 < kWords) want[cpu / 64] |= 1UL << (cpu % 64);
  }
  std::vector<unsigned long> got(kWords, ~0UL);
  ASSERT_EQ(nvml().nvmlDeviceGetCpuAffinity(Device(4), kWords, got.data()),
            NVML_SUCCESS);
  EXPECT_EQ(got, want);
  EXPECT_EQ(nvml().nvmlDeviceGetCpuAffinity(Device(4), 0, got.data()),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetCpuAffinity(Device(4), kWords, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gpulet::sim::testing
