// DynamicLibrary against an old-ABI NVML (testdata/legacy_nvml.cc): the
// fallbacks from versioned to unversioned entry points, the old PCI struct
// layout, and Unimplemented for functions the library does not export.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/gpu/nvml/dynamic_library.h"

namespace gpulet::nvml {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

class LegacyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LoadOptions options;
    options.library_path = GPULET_LEGACY_NVML;
    absl::StatusOr<LibraryPtr> library = OpenLibrary(options);
    ASSERT_TRUE(library.ok()) << library.status();
    library_ = std::move(*library);
    const absl::Status init = library_->Init();  // through plain nvmlInit
    ASSERT_TRUE(init.ok()) << init;
    absl::StatusOr<Device> gpu = library_->DeviceGetHandleByIndex(0);
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    gpu_ = *gpu;
  }

  LibraryPtr library_;
  Device gpu_ = nullptr;
};

TEST_F(LegacyTest, UnversionedEnumerationIsUsed) {
  const absl::StatusOr<unsigned> count = library_->DeviceGetCount();
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 1u);
  const absl::StatusOr<Device> missing = library_->DeviceGetHandleByIndex(5);
  ASSERT_FALSE(missing.ok());
  // The error names the symbol that was really called.
  EXPECT_THAT(Message(missing.status()),
              StartsWith("nvmlDeviceGetHandleByIndex(GPU 5): Legacy Error "
                         "[NVML_ERROR_INVALID_ARGUMENT]"));
}

TEST_F(LegacyTest, OldPciLayoutIsConvertedWithoutReadingReservedWords) {
  const absl::StatusOr<PciInfo> pci = library_->DeviceGetPciInfo(gpu_);
  ASSERT_TRUE(pci.ok()) << pci.status();
  EXPECT_EQ(pci->bus_id, "00000000:3B:00.0");
  EXPECT_EQ(pci->bus_id_legacy, "0000:3B:00.0");
  EXPECT_EQ(pci->bus, 0x3bu);
  EXPECT_EQ(pci->pci_device_id, 0x1eb810deu);
  EXPECT_EQ(pci->pci_subsystem_id, 0x12a210deu);
}

TEST_F(LegacyTest, MemoryFallsBackToV1OnVersionMismatch) {
  const absl::StatusOr<MemoryInfo> memory = library_->DeviceGetMemoryInfo(gpu_);
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(memory->total, 16ULL << 30);
  EXPECT_EQ(memory->used, 1ULL << 30);
  EXPECT_EQ(memory->free, 15ULL << 30);
  EXPECT_EQ(memory->reserved, 0u);
}

TEST_F(LegacyTest, FabricInfoFallsBackToV2OnVersionMismatch) {
  const absl::StatusOr<GpuFabricInfo> fabric =
      library_->DeviceGetGpuFabricInfo(gpu_);
  ASSERT_TRUE(fabric.ok()) << fabric.status();
  EXPECT_EQ(fabric->version, 2u);
  EXPECT_EQ(fabric->cluster_uuid, "a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
  EXPECT_EQ(fabric->clique_id, 5u);
  EXPECT_EQ(fabric->state, NVML_GPU_FABRIC_STATE_COMPLETED);
  EXPECT_EQ(fabric->health_mask, 0x2u);
  EXPECT_EQ(fabric->health_summary,
            NVML_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED);
}

TEST_F(LegacyTest, AbsentFunctionIsUnimplementedNamingSymbolAndFile) {
  const absl::StatusOr<unsigned> numa = library_->DeviceGetNumaNodeId(gpu_);
  ASSERT_FALSE(numa.ok());
  EXPECT_TRUE(absl::IsUnimplemented(numa.status())) << numa.status();
  EXPECT_EQ(Message(numa.status()),
            std::string("NVML function nvmlDeviceGetNumaNodeId is not "
                        "available in ") +
                GPULET_LEGACY_NVML);
  const absl::StatusOr<EventSetPtr> events = library_->EventSetCreate();
  EXPECT_TRUE(absl::IsUnimplemented(events.status())) << events.status();
  const absl::StatusOr<PciInfo> remote =
      library_->DeviceGetNvLinkRemotePciInfo(gpu_, 0);
  EXPECT_THAT(Message(remote.status()),
              HasSubstr("nvmlDeviceGetNvLinkRemotePciInfo_v2"));
}

TEST_F(LegacyTest, DestructorBalancesInit) {
  // A second user of the same loaded copy sees NVML's shared count.
  LoadOptions options;
  options.library_path = GPULET_LEGACY_NVML;
  absl::StatusOr<LibraryPtr> other = OpenLibrary(options);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE(library_->Init().ok());  // NVML count 2
  EXPECT_TRUE((*other)->DeviceGetCount().ok());
  library_.reset();  // two nvmlShutdown calls
  const absl::StatusOr<unsigned> count = (*other)->DeviceGetCount();
  EXPECT_TRUE(absl::IsFailedPrecondition(count.status())) << count.status();
  EXPECT_THAT(Message(count.status()), HasSubstr("NVML_ERROR_UNINITIALIZED"));
}

}  // namespace
}  // namespace gpulet::nvml
