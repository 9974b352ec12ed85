#include "sim/profiles.h"

#include <unistd.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/gpu_models.h"
#include "sim/machine_parser.h"

namespace gpulet::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

Machine Load(const std::string& spec) {
  absl::StatusOr<Machine> m = LoadMachine(spec);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : Machine{};
}

size_t LinksOfType(const Gpu& gpu, nvmlIntNvLinkDeviceType_t type) {
  size_t n = 0;
  for (const NvLink& link : gpu.nvlinks) n += link.remote_type == type;
  return n;
}

std::set<std::string> SwitchBusIds(const Gpu& gpu) {
  std::set<std::string> ids;
  for (const NvLink& link : gpu.nvlinks) {
    if (link.remote_type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
      ids.insert(link.remote_bus_id);
    }
  }
  return ids;
}

// go-nvlib's rule for the memory part of a MIG profile name: the MIG
// memory as a fraction of the GPU rounded up to eighths, times the GPU's
// memory in whole GiB (rounded up), rounded to the nearest integer.
uint64_t MigMemoryGb(uint64_t device_bytes, uint64_t mig_mib) {
  double fraction = static_cast<double>(mig_mib << 20) / device_bytes;
  fraction = std::ceil(fraction * 8) / 8;
  uint64_t total_gb = (device_bytes + (uint64_t{1} << 30) - 1) >> 30;
  return static_cast<uint64_t>(std::round(fraction * total_gb));
}

std::string DerivedName(const Gpu& gpu, const GpuInstanceProfile& p) {
  std::string name =
      absl::StrCat(p.slice_count, "g.",
                   MigMemoryGb(gpu.memory_total, p.memory_size_mb), "gb");
  switch (p.id) {
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1:
      return name + "+me";
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
      return name + "+me.all";
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
      return name + "-me";
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX:
      return name + "+gfx";
    default:
      return name;
  }
}

TEST(ProfilesTest, NamesAreSortedAndComplete) {
  EXPECT_THAT(ProfileNames(),
              ElementsAre("a100-mig", "a100-mig-single", "b200-mig",
                          "dgx-a100", "dgx-b200", "dgx-h100", "gb200-nvl",
                          "hgx-h200", "islands-16", "mixed-memory",
                          "mixed-vfio", "no-driver", "none", "pcie-t4",
                          "rtx-pro-6000-mig", "vfio-groups", "vfio-iommufd",
                          "vgpu-host"));
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
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(m.topology[i].size(), n);
      EXPECT_EQ(m.topology[i][i], NVML_TOPOLOGY_INTERNAL);
      for (size_t j = 0; j < n; ++j)
        EXPECT_EQ(m.topology[i][j], m.topology[j][i]);
      const Gpu& g = m.gpus[i];
      EXPECT_EQ(g.minor, i);
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

std::vector<std::string> MigProfileNames(const Gpu& gpu) {
  std::vector<std::string> names;
  for (const MigDevice& d : gpu.mig_devices) {
    for (const auto& p : gpu.gi_profiles) {
      if (p.id == d.gpu_instance_profile_id) names.push_back(p.name);
    }
  }
  return names;
}

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

TEST(ProfilesTest, NoneAndNoDriver) {
  Machine none = Load("none");
  EXPECT_TRUE(none.driver_loaded);
  EXPECT_TRUE(none.gpus.empty());
  EXPECT_TRUE(none.topology.empty());
  Machine no_driver = Load("no-driver");
  EXPECT_FALSE(no_driver.driver_loaded);
  EXPECT_EQ(no_driver.init_error, NVML_ERROR_DRIVER_NOT_LOADED);
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

class LoadMachineFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpulet-sim-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& contents) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << contents;
    return path;
  }

  std::string dir_;
};

TEST_F(LoadMachineFileTest, LoadsAFileByPath) {
  std::string path = Write("m.yaml", std::string(*ProfileYaml("pcie-t4")));
  Machine m = Load(path);
  EXPECT_EQ(m.source, path);
  EXPECT_EQ(m.gpus.size(), 4u);
}

TEST_F(LoadMachineFileTest, ErrorsNameTheFile) {
  std::string path = Write("bad.yml", "gpus: [\n");
  absl::StatusOr<Machine> m = LoadMachine(path);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), StartsWith(path + ":"));
}

TEST_F(LoadMachineFileTest, MissingFile) {
  absl::StatusOr<Machine> m = LoadMachine(dir_ + "/absent.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr(dir_ + "/absent.yaml"));
}

TEST_F(LoadMachineFileTest, HugeFileRejectedBeforeReading) {
  std::string path =
      Write("huge.yaml", std::string(kMaxMachineFileBytes + 10, '#'));
  absl::StatusOr<Machine> m = LoadMachine(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr("the limit is 1048576"));
}

// docs/machine-file.md promises that its complete example loads.
TEST(MachineFileDocTest, CompleteExampleParses) {
  std::ifstream in(GPULET_SOURCE_DIR "/docs/machine-file.md");
  ASSERT_TRUE(in) << "docs/machine-file.md not found";
  std::string doc((std::istreambuf_iterator<char>(in)),
                  std::istreambuf_iterator<char>());
  size_t section = doc.find("## A complete example");
  ASSERT_NE(section, std::string::npos);
  size_t begin = doc.find("```yaml\n", section);
  ASSERT_NE(begin, std::string::npos);
  begin += 8;
  size_t end = doc.find("```", begin);
  absl::StatusOr<Machine> m =
      ParseMachine(doc.substr(begin, end - begin), "machine-file.md");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->gpus.size(), 2u);
  EXPECT_EQ(m->gpus[1].mig_devices.size(), 3u);
  EXPECT_EQ(m->gpus[0].nvlinks.size(), 12u);
}

TEST(LoadMachineTest, UnknownProfileListsBuiltIns) {
  absl::StatusOr<Machine> m = LoadMachine("dgx-z");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(m.status().message()),
              StartsWith("unknown machine profile \"dgx-z\" (built-in: "
                         "a100-mig, a100-mig-single, b200-mig, dgx-a100, "
                         "dgx-b200, dgx-h100, gb200-nvl, hgx-h200, "
                         "islands-16, mixed-memory, mixed-vfio, no-driver, "
                         "none, pcie-t4, rtx-pro-6000-mig, vfio-groups, "
                         "vfio-iommufd, vgpu-host"));
}

}  // namespace
}  // namespace gpulet::sim
