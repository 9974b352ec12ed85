// The machine file's passthrough keys: boundDriver, iommuGroup, functions,
// mdevTypes, mdevs, and the root key iommufd.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/machine_parser.h"

namespace gpulet::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Gpu(int n, const std::string& extra = "") {
  return absl::StrCat("  - uuid: GPU-", n,
                      "0000000-0000-4000-8000-000000000000\n",
                      "    busId: \"0000:", n, "7:00.0\"\n",
                      "    name: Test GPU\n    memory: 16GiB\n", extra);
}

absl::StatusOr<Machine> Parse(const std::string& gpus,
                              const std::string& root = "") {
  return ParseMachine(absl::StrCat(root, "gpus:\n", gpus), "m.yaml");
}

TEST(PassthroughParserTest, DefaultsLeaveGpuOnNvidiaInItsOwnGroup) {
  absl::StatusOr<Machine> m = Parse(Gpu(1) + Gpu(2));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->iommufd);
  ASSERT_EQ(m->gpus.size(), 2u);
  EXPECT_TRUE(m->host_gpus.empty());
  EXPECT_EQ(m->gpus[1].bound_driver, "nvidia");
  EXPECT_EQ(m->gpus[1].iommu_group, 1);
  EXPECT_TRUE(m->gpus[1].functions.empty());
}

TEST(PassthroughParserTest, VfioGpuLeavesNvmlAndMinorsRenumber) {
  absl::StatusOr<Machine> m = Parse(
      Gpu(1,
          "    boundDriver: vfio-pci\n    iommuGroup: 9\n"
          "    functions:\n"
          "      - {address: \"0000:17:00.1\", device: 0x22e8, class: 0x040300,"
          " driver: snd_hda_intel}\n"
          "      - {address: \"0000:18:00.0\", vendor: 0x144d, device: 0xa80a,"
          " class: 0x010802}\n") +
          Gpu(2),
      "iommufd: true\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->iommufd);
  ASSERT_EQ(m->gpus.size(), 1u);
  EXPECT_EQ(m->gpus[0].bus_id, "00000000:27:00.0");
  EXPECT_EQ(m->gpus[0].minor, 0u);
  ASSERT_EQ(m->host_gpus.size(), 1u);
  const sim::Gpu& host = m->host_gpus[0];
  EXPECT_EQ(host.iommu_group, 9);
  ASSERT_EQ(host.functions.size(), 2u);
  EXPECT_EQ(host.functions[0].address, "0000:17:00.1");
  EXPECT_EQ(host.functions[0].vendor, 0x10de);
  EXPECT_EQ(host.functions[0].driver, "snd_hda_intel");
  EXPECT_EQ(host.functions[1].vendor, 0x144d);
  EXPECT_EQ(host.functions[1].driver, "");
}

TEST(PassthroughParserTest, MdevTypesFromDefaultsAndInstances) {
  absl::StatusOr<Machine> m = ParseMachine(
      "gpuDefaults:\n  mdevTypes:\n    - {id: nvidia-700, name: A, available: "
      "3}\n"
      "gpus:\n" +
          Gpu(1,
              "    mdevs:\n"
              "      - {uuid: 9F1C6D2A-4B3E-4E8F-A1D7-5C0B2E9F8A63, "
              "type: nvidia-700}\n"),
      "m.yaml");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->gpus[0].mdev_types.size(), 1u);
  EXPECT_EQ(m->gpus[0].mdev_types[0].available, 3u);
  ASSERT_EQ(m->gpus[0].mdevs.size(), 1u);
  EXPECT_EQ(m->gpus[0].mdevs[0].uuid, "9f1c6d2a-4b3e-4e8f-a1d7-5c0b2e9f8a63");
}

struct Bad {
  const char* name;
  std::string gpus;
  std::string message;
};

class PassthroughRejectTest : public ::testing::TestWithParam<Bad> {};

TEST_P(PassthroughRejectTest, ErrorNamesTheField) {
  absl::StatusOr<Machine> m = Parse(GetParam().gpus);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(m.status().message()), StartsWith("m.yaml:"));
  EXPECT_THAT(std::string(m.status().message()), HasSubstr(GetParam().message));
}

const std::string kFn = "    functions:\n      - {address: \"0000:17:00.1\", ";

INSTANTIATE_TEST_SUITE_P(
    Fields, PassthroughRejectTest,
    ::testing::Values(
        Bad{"DriverName", Gpu(1, "    boundDriver: \"VFIO pci\"\n"),
            "gpus[0].boundDriver: malformed driver name"},
        Bad{"GroupRange", Gpu(1, "    iommuGroup: -2\n"),
            "gpus[0].iommuGroup: -2 is out of range"},
        Bad{"FunctionAddress",
            Gpu(1,
                "    functions:\n      - {address: \"17:00.1\", device: 1, "
                "class: 0x040300}\n"),
            "gpus[0].functions[0].address: malformed PCI bus ID"},
        Bad{"FunctionClass", Gpu(1, kFn + "device: 1, class: 0x1000000}\n"),
            "gpus[0].functions[0].class: 16777216 is out of range"},
        Bad{"FunctionDeviceMissing", Gpu(1, kFn + "class: 0x040300}\n"),
            "gpus[0].functions[0].device: required key is missing"},
        Bad{"FunctionUnknownKey",
            Gpu(1, kFn + "device: 1, class: 3, drvier: x}\n"),
            "gpus[0].functions[0].drvier: unknown key"},
        Bad{"FunctionClashesWithGpu",
            Gpu(1) + Gpu(2,
                         "    functions:\n      - {address: \"0000:17:00.0\", "
                         "device: 1, class: 0x040300}\n"),
            "gpus[1].functions[0].address: duplicate PCI address 0000:17:00.0 "
            "(also at gpus[0].busId)"},
        Bad{"MdevUuid",
            Gpu(1,
                "    mdevTypes: [{id: nvidia-1, name: A}]\n"
                "    mdevs: [{uuid: not-a-uuid, type: nvidia-1}]\n"),
            "gpus[0].mdevs[0].uuid: malformed mdev UUID"},
        Bad{"MdevUnknownType",
            Gpu(1,
                "    mdevTypes: [{id: nvidia-1, name: A}]\n"
                "    mdevs: [{uuid: 9f1c6d2a-4b3e-4e8f-a1d7-5c0b2e9f8a63, "
                "type: nvidia-2}]\n"),
            "gpus[0].mdevs[0].type: mdev type nvidia-2 is not in the GPU's "
            "mdevTypes"},
        Bad{"MdevTypeAvailable",
            Gpu(1,
                "    mdevTypes: [{id: nvidia-1, name: A, available: lots}]\n"),
            "gpus[0].mdevTypes[0].available:"},
        Bad{"NvLinkAcrossDrivers",
            Gpu(1, "    nvlinks: [{gpu: 1}]\n") +
                Gpu(2, "    boundDriver: vfio-pci\n    nvlinks: [{gpu: 0}]\n"),
            "GPU 1 bound to another driver"}),
    [](const ::testing::TestParamInfo<Bad>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace gpulet::sim
