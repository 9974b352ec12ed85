// The built-in machine profiles: every one parses and is consistent, and
// each machine has the GPUs, NVLinks, NVSwitches, topology and passthrough
// devices its hardware has. The MIG machines are in profiles_mig_test.cc.
#include "sim/profiles.h"

#include <array>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/gpu_models.h"
#include "sim/machine_parser.h"
#include "sim/testing/machine_checks.h"

namespace gpulet::sim {
namespace {

using test_machines::DerivedName;
using test_machines::LinksOfType;
using test_machines::Load;
using test_machines::SwitchBusIds;
using ::testing::ElementsAre;

TEST(ProfilesTest, NamesAreSortedAndComplete) {
  EXPECT_THAT(ProfileNames(),
              ElementsAre("a100-mig", "a100-mig-single", "b200-mig", "dgx-a100",
                          "dgx-b200", "dgx-h100", "gb200-nvl", "hgx-h200",
                          "islands-16", "mixed-memory", "mixed-vfio",
                          "no-driver", "none", "pcie-t4", "rtx-pro-6000-mig",
                          "vfio-groups", "vfio-iommufd", "vgpu-host"));
  EXPECT_TRUE(ProfileYaml("dgx-h100").has_value());
  EXPECT_FALSE(ProfileYaml("dgx-h200").has_value());
}

TEST(ProfilesTest, EveryProfileParsesAndIsConsistent) {
  for (const std::string& name : ProfileNames()) {
    SCOPED_TRACE(name);
    Machine m = Load(name);
    EXPECT_EQ(m.source, "profile:" + name);
    EXPECT_FALSE(m.description.empty());
    const size_t n = m.gpus.size();
    ASSERT_EQ(m.topology.size(), n);
    std::set<unsigned> minors;
    for (const Gpu& g : m.gpus) {
      EXPECT_TRUE(minors.insert(g.minor).second) << "minor " << g.minor;
    }
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(m.topology[i].size(), n);
      EXPECT_EQ(m.topology[i][i], NVML_TOPOLOGY_INTERNAL);
      for (size_t j = 0; j < n; ++j)
        EXPECT_EQ(m.topology[i][j], m.topology[j][i]);
      const Gpu& g = m.gpus[i];
      EXPECT_FALSE(g.cpu_affinity.empty());
      EXPECT_GE(g.numa_node, 0);
      EXPECT_NE(g.supported_events & nvmlEventTypeXidCriticalError, 0u);
      for (const NvLink& link : g.nvlinks) {
        EXPECT_FALSE(link.remote_bus_id.empty());
        if (link.remote_type == NVML_NVLINK_DEVICE_TYPE_GPU) {
          EXPECT_EQ(link.remote_bus_id, m.gpus[link.peer_gpu].bus_id);
        }
      }
      // Every MIG device's attributes name its profile the way NVIDIA's
      // device plugin derives it.
      for (const MigDevice& d : g.mig_devices) {
        const GpuInstanceProfile* p = nullptr;
        for (const auto& gp : g.gi_profiles) {
          if (gp.id == d.gpu_instance_profile_id) p = &gp;
        }
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(DerivedName(g, *p), p->name);
      }
    }
  }
}

TEST(ProfilesTest, MixedVfioHidesFourGpusFromNvml) {
  Machine m = Load("mixed-vfio");
  ASSERT_EQ(m.gpus.size(), 4u);
  ASSERT_EQ(m.host_gpus.size(), 4u);
  EXPECT_EQ(m.gpus[3].bus_id, "00000000:61:00.0");
  EXPECT_EQ(m.gpus[3].iommu_group, 33);
  EXPECT_EQ(m.host_gpus[0].bus_id, "00000000:9D:00.0");
  EXPECT_EQ(m.host_gpus[0].bound_driver, "vfio-pci");
  EXPECT_EQ(m.host_gpus[0].iommu_group, 50);
  ASSERT_EQ(m.topology.size(), 4u);
  EXPECT_EQ(m.topology[0][1], NVML_TOPOLOGY_MULTIPLE);
}

TEST(ProfilesTest, PassthroughProfiles) {
  Machine groups = Load("vfio-groups");
  ASSERT_EQ(groups.gpus.size(), 3u);
  ASSERT_EQ(groups.host_gpus.size(), 1u);
  EXPECT_EQ(groups.gpus[0].minor, 0u);  // numbered among nvidia's GPUs
  EXPECT_EQ(groups.gpus[0].iommu_group, groups.gpus[1].iommu_group);
  ASSERT_EQ(groups.gpus[2].functions.size(), 1u);
  EXPECT_EQ(groups.gpus[2].functions[0].class_code, 0x010802u);
  EXPECT_EQ(groups.gpus[2].functions[0].vendor, 0x144d);
  EXPECT_EQ(groups.gpus[2].functions[0].driver, "nvme");
  Machine iommufd = Load("vfio-iommufd");
  EXPECT_TRUE(iommufd.iommufd);
  EXPECT_TRUE(iommufd.gpus.empty());
  EXPECT_EQ(iommufd.host_gpus.size(), 2u);
  Machine vgpu = Load("vgpu-host");
  ASSERT_EQ(vgpu.gpus.size(), 2u);
  EXPECT_EQ(vgpu.gpus[0].mdev_types.size(), 3u);
  ASSERT_EQ(vgpu.gpus[0].mdevs.size(), 2u);
  EXPECT_EQ(vgpu.gpus[0].mdevs[0].type, "nvidia-701");
  EXPECT_TRUE(vgpu.gpus[1].mdevs.empty());
}

TEST(ProfilesTest, DefaultIsDgxH100) {
  Machine m = Load("");
  EXPECT_EQ(m.source, "profile:dgx-h100");
  ASSERT_EQ(m.gpus.size(), 8u);
  for (const Gpu& g : m.gpus) {
    EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(g.architecture, NVML_DEVICE_ARCH_HOPPER);
    EXPECT_EQ(g.cc_major, 9);
    EXPECT_EQ(g.cc_minor, 0);
    EXPECT_EQ(g.memory_total, uint64_t{81559} << 20);
    EXPECT_EQ(g.nvlinks.size(), 18u);
    EXPECT_EQ(LinksOfType(g, NVML_NVLINK_DEVICE_TYPE_SWITCH), 18u);
    EXPECT_EQ(SwitchBusIds(g).size(), 4u);
    EXPECT_EQ(g.pci_device_id, 0x233010DEu);
  }
  EXPECT_EQ(m.gpus[3].numa_node, 0);
  EXPECT_EQ(m.gpus[4].numa_node, 1);
  EXPECT_EQ(m.gpus[0].cpu_affinity.size(), 112u);
  EXPECT_EQ(m.topology[0][1], NVML_TOPOLOGY_MULTIPLE);
  EXPECT_EQ(m.topology[0][3], NVML_TOPOLOGY_NODE);
  EXPECT_EQ(m.topology[3][4], NVML_TOPOLOGY_SYSTEM);
}

// The minors as the profiles write them, by UUID: NVML's index order (bus
// order) is not the driver's probe order, and one minor is left unused, so
// a reader that takes the index for the minor gets another GPU or none.
TEST(ProfilesTest, MinorsAreNotIndexes) {
  struct Want {
    const char* profile;
    std::vector<std::pair<std::string, unsigned>> uuid_minor;  // index order
  };
  const Want wants[] = {
      {"dgx-h100",
       {{"GPU-9605369a-4cef-521f-904b-cafb54df34d0", 2},
        {"GPU-9d391317-5af3-50b6-beff-a02793204443", 3},
        {"GPU-f0721ffb-e66f-52de-a86e-1c9b040c372a", 0},
        {"GPU-a247cf48-492c-51cb-8f9d-afdf8da01c25", 1},
        {"GPU-cccd02ab-8116-568f-884a-21353f0a0a66", 6},
        {"GPU-5e3a5380-1a96-5e70-ab29-387692334a60", 8},
        {"GPU-4e2715e4-ebc8-5c76-9654-d23b8fe77138", 4},
        {"GPU-a5b17024-e9e5-5422-b1c3-d471ebf556ac", 5}}},
      {"a100-mig",
       {{"GPU-81522b7c-0696-540e-9229-21505149f9a1", 2},
        {"GPU-d8c16c85-4ebf-5ad7-897d-da74759e0946", 0},
        {"GPU-b5693fc3-184f-5903-8408-1cf65f944e4d", 4},
        {"GPU-7686041d-dbe9-5c49-b4fb-b61b57525544", 1}}},
  };
  for (const Want& want : wants) {
    SCOPED_TRACE(want.profile);
    Machine m = Load(want.profile);
    ASSERT_EQ(m.gpus.size(), want.uuid_minor.size());
    for (size_t i = 0; i < m.gpus.size(); ++i) {
      EXPECT_EQ(m.gpus[i].uuid, want.uuid_minor[i].first) << i;
      EXPECT_EQ(m.gpus[i].minor, want.uuid_minor[i].second) << i;
      EXPECT_NE(m.gpus[i].minor, i);
    }
  }
}

TEST(ProfilesTest, DgxA100) {
  Machine m = Load("dgx-a100");
  ASSERT_EQ(m.gpus.size(), 8u);
  std::set<std::string> switches;
  for (const Gpu& g : m.gpus) {
    EXPECT_EQ(g.name, "NVIDIA A100-SXM4-40GB");
    EXPECT_EQ(g.architecture, NVML_DEVICE_ARCH_AMPERE);
    EXPECT_EQ(g.memory_total, uint64_t{40} << 30);
    EXPECT_EQ(g.multiprocessor_count, 108u);
    EXPECT_EQ(g.nvlinks.size(), 12u);
    EXPECT_EQ(SwitchBusIds(g).size(), 6u);
    EXPECT_TRUE(g.mig_capable);
    EXPECT_FALSE(g.mig_enabled);
    EXPECT_TRUE(g.mig_devices.empty());
    for (const auto& id : SwitchBusIds(g)) switches.insert(id);
  }
  EXPECT_EQ(switches.size(), 6u);  // one fabric
  EXPECT_EQ(m.gpus[0].bus_id, "00000000:07:00.0");
  EXPECT_EQ(m.gpus[2].numa_node, 0);
  EXPECT_EQ(m.gpus[5].numa_node, 1);
  EXPECT_EQ(m.gpus[0].cpu_affinity.front(), 0u);
  EXPECT_EQ(m.gpus[0].cpu_affinity.back(), 191u);
  EXPECT_EQ(m.topology[0][1], NVML_TOPOLOGY_MULTIPLE);
  EXPECT_EQ(m.topology[0][2], NVML_TOPOLOGY_NODE);
  EXPECT_EQ(m.topology[0][4], NVML_TOPOLOGY_SYSTEM);
  EXPECT_EQ(m.topology[6][7], NVML_TOPOLOGY_MULTIPLE);
}

TEST(ProfilesTest, PcieT4) {
  Machine m = Load("pcie-t4");
  ASSERT_EQ(m.gpus.size(), 4u);
  for (const Gpu& g : m.gpus) {
    EXPECT_EQ(g.name, "Tesla T4");
    EXPECT_EQ(g.architecture, NVML_DEVICE_ARCH_TURING);
    EXPECT_EQ(g.cc_major, 7);
    EXPECT_EQ(g.cc_minor, 5);
    EXPECT_EQ(g.memory_total, uint64_t{15360} << 20);
    EXPECT_TRUE(g.nvlinks.empty());
    EXPECT_FALSE(g.mig_capable);
    EXPECT_EQ(g.max_mig_devices, 0u);
  }
  EXPECT_EQ(m.cuda_driver_version, 12020);
  EXPECT_EQ(m.gpus[1].numa_node, 0);
  EXPECT_EQ(m.gpus[2].numa_node, 1);
  EXPECT_EQ(m.topology[0][1], NVML_TOPOLOGY_SINGLE);
  EXPECT_EQ(m.topology[2][3], NVML_TOPOLOGY_HOSTBRIDGE);
  EXPECT_EQ(m.topology[1][2], NVML_TOPOLOGY_SYSTEM);
}

TEST(ProfilesTest, Islands16) {
  Machine m = Load("islands-16");
  ASSERT_EQ(m.gpus.size(), 16u);
  std::set<std::string> island[2];
  for (size_t i = 0; i < 16; ++i) {
    const Gpu& g = m.gpus[i];
    EXPECT_EQ(g.name, "NVIDIA A100-SXM4-80GB");
    EXPECT_EQ(g.numa_node, static_cast<int>(i / 8));
    EXPECT_EQ(g.nvlinks.size(), 12u);
    for (const auto& id : SwitchBusIds(g)) island[i / 8].insert(id);
    for (size_t j = 0; j < 16; ++j) {
      if (i / 8 != j / 8) {
        EXPECT_EQ(m.topology[i][j], NVML_TOPOLOGY_SYSTEM);
      }
    }
  }
  EXPECT_EQ(island[0].size(), 6u);
  EXPECT_EQ(island[1].size(), 6u);
  for (const auto& id : island[0]) EXPECT_EQ(island[1].count(id), 0u) << id;
  EXPECT_EQ(m.topology[8][9], NVML_TOPOLOGY_MULTIPLE);
  EXPECT_EQ(m.topology[8][15], NVML_TOPOLOGY_NODE);
}

TEST(ProfilesTest, DgxB200) {
  Machine m = Load("dgx-b200");
  ASSERT_EQ(m.gpus.size(), 8u);
  EXPECT_EQ(m.driver_version, "580.82.07");
  EXPECT_EQ(m.nvml_version, "13.580.82.07");
  EXPECT_EQ(m.cuda_driver_version, 13000);
  std::set<std::string> switches;
  for (const Gpu& g : m.gpus) {
    EXPECT_EQ(g.name, "NVIDIA B200");
    EXPECT_EQ(g.architecture, NVML_DEVICE_ARCH_BLACKWELL);
    EXPECT_EQ(g.cc_major, 10);
    EXPECT_EQ(g.cc_minor, 0);
    // 179 GiB: NVIDIA's "180 GB" B200.
    EXPECT_EQ(g.memory_total, uint64_t{183359} << 20);
    EXPECT_EQ(g.nvlinks.size(), 18u);  // NVLink 5
    EXPECT_EQ(LinksOfType(g, NVML_NVLINK_DEVICE_TYPE_SWITCH), 18u);
    EXPECT_TRUE(g.mig_capable);
    EXPECT_FALSE(g.mig_enabled);
    EXPECT_FALSE(g.fabric.has_value());
    for (const auto& id : SwitchBusIds(g)) switches.insert(id);
  }
  EXPECT_EQ(switches.size(), 2u);
  EXPECT_EQ(m.imex_channels, 0u);
  EXPECT_EQ(m.topology[0][1], NVML_TOPOLOGY_MULTIPLE);
  EXPECT_EQ(m.topology[0][4], NVML_TOPOLOGY_SYSTEM);
}

TEST(ProfilesTest, HgxH200) {
  Machine m = Load("hgx-h200");
  ASSERT_EQ(m.gpus.size(), 8u);
  EXPECT_EQ(m.nvml_version, "12.570.172.08");
  for (const Gpu& g : m.gpus) {
    EXPECT_EQ(g.name, "NVIDIA H200");
    EXPECT_EQ(g.architecture, NVML_DEVICE_ARCH_HOPPER);
    EXPECT_EQ(g.memory_total, uint64_t{143771} << 20);  // 141 GB HBM3e
    EXPECT_EQ(g.nvlinks.size(), 18u);
    EXPECT_EQ(SwitchBusIds(g).size(), 4u);
  }
}

TEST(ProfilesTest, Gb200NvlTrayIsOneFabricClique) {
  Machine m = Load("gb200-nvl");
  ASSERT_EQ(m.gpus.size(), 4u);
  EXPECT_EQ(m.imex_channels, 2048u);
  const std::array<unsigned char, NVML_GPU_FABRIC_UUID_LEN> cluster =
      m.gpus[0].fabric.value().cluster_uuid;
  EXPECT_EQ(cluster[0], 0x19);  // "190abd46-..."
  for (const Gpu& g : m.gpus) {
    EXPECT_EQ(g.name, "NVIDIA GB200");
    EXPECT_EQ(g.architecture, NVML_DEVICE_ARCH_BLACKWELL);
    EXPECT_EQ(g.nvlinks.size(), 18u);
    EXPECT_EQ(SwitchBusIds(g).size(), 18u);  // one link to each switch chip
    ASSERT_TRUE(g.fabric.has_value());
    EXPECT_EQ(g.fabric->cluster_uuid, cluster);
    EXPECT_EQ(g.fabric->clique_id, 32766u);
    EXPECT_EQ(g.fabric->state, NVML_GPU_FABRIC_STATE_COMPLETED);
    EXPECT_EQ(g.fabric->status, NVML_SUCCESS);
    EXPECT_EQ(g.fabric->health_summary, NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY);
  }
  EXPECT_EQ(m.gpus[2].bus_id, "00000018:01:00.0");
  EXPECT_EQ(m.gpus[1].numa_node, 0);
  EXPECT_EQ(m.gpus[2].numa_node, 1);
}

TEST(ProfilesTest, NoneAndNoDriver) {
  Machine none = Load("none");
  EXPECT_TRUE(none.driver_loaded);
  EXPECT_TRUE(none.gpus.empty());
  EXPECT_TRUE(none.topology.empty());
  Machine no_driver = Load("no-driver");
  EXPECT_FALSE(no_driver.driver_loaded);
  EXPECT_EQ(no_driver.init_error, NVML_ERROR_DRIVER_NOT_LOADED);
}

}  // namespace
}  // namespace gpulet::sim
