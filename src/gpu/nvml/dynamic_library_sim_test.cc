// Every nvml::Library method, through DynamicLibrary, against the simulator:
// the answers must be the facts of the machine the simulator was given. The
// expected values come from the same built-in profile, parsed here with
// sim::LoadMachine, so the test follows the profiles instead of copying them.
#include <stdlib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/machine.h"
#include "sim/profiles.h"
#include "src/gpu/nvml/dynamic_library.h"
#include "src/gpu/testing/sim_test_support.h"

namespace gpulet::nvml {
namespace {

using ::gpulet::nvml::simtest::Message;
using ::gpulet::nvml::simtest::SimControl;
using ::gpulet::nvml::simtest::SimTest;
using ::gpulet::nvml::simtest::TempDir;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class SimFactsTest : public SimTest {
 protected:
  // Loads `profile` both ways: parsed (expected) and through NVML (actual).
  void Load(const std::string& profile) {
    absl::StatusOr<sim::Machine> machine = sim::LoadMachine(profile);
    ASSERT_TRUE(machine.ok()) << machine.status();
    machine_ = std::move(*machine);
    library_ = OpenSim(profile);
    ASSERT_NE(library_, nullptr);
    for (unsigned i = 0; i < machine_.gpus.size(); ++i) {
      absl::StatusOr<Device> device = library_->DeviceGetHandleByIndex(i);
      ASSERT_TRUE(device.ok()) << device.status();
      gpus_.push_back(*device);
    }
  }

  sim::Machine machine_;
  LibraryPtr library_;
  std::vector<Device> gpus_;
};

TEST_F(SimFactsTest, SystemFacts) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  GPULET_ASSERT_OK_AND_ASSIGN(driver, library_->SystemGetDriverVersion());
  EXPECT_EQ(driver, machine_.driver_version);
  GPULET_ASSERT_OK_AND_ASSIGN(nvml_version, library_->SystemGetNvmlVersion());
  EXPECT_THAT(nvml_version, HasSubstr(machine_.driver_version));
  GPULET_ASSERT_OK_AND_ASSIGN(cuda, library_->SystemGetCudaDriverVersion());
  EXPECT_EQ(cuda, machine_.cuda_driver_version);
  GPULET_ASSERT_OK_AND_ASSIGN(count, library_->DeviceGetCount());
  EXPECT_EQ(count, machine_.gpus.size());
  EXPECT_EQ(count, 8u);
}

TEST_F(SimFactsTest, DeviceIdentity) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  for (unsigned i = 0; i < gpus_.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("GPU ", i));
    const sim::Gpu& want = machine_.gpus[i];
    const Device gpu = gpus_[i];
    GPULET_ASSERT_OK_AND_ASSIGN(index, library_->DeviceGetIndex(gpu));
    EXPECT_EQ(index, i);
    GPULET_ASSERT_OK_AND_ASSIGN(uuid, library_->DeviceGetUuid(gpu));
    EXPECT_EQ(uuid, want.uuid);
    GPULET_ASSERT_OK_AND_ASSIGN(name, library_->DeviceGetName(gpu));
    EXPECT_EQ(name, want.name);
    EXPECT_THAT(name, HasSubstr("H100"));
    GPULET_ASSERT_OK_AND_ASSIGN(serial, library_->DeviceGetSerial(gpu));
    EXPECT_EQ(serial, want.serial);
    GPULET_ASSERT_OK_AND_ASSIGN(minor, library_->DeviceGetMinorNumber(gpu));
    EXPECT_EQ(minor, want.minor);
    GPULET_ASSERT_OK_AND_ASSIGN(by_uuid, library_->DeviceGetHandleByUuid(uuid));
    EXPECT_EQ(by_uuid, gpu);
    GPULET_ASSERT_OK_AND_ASSIGN(
        by_bus, library_->DeviceGetHandleByPciBusId(want.bus_id));
    EXPECT_EQ(by_bus, gpu);
    GPULET_ASSERT_OK_AND_ASSIGN(is_mig, library_->DeviceIsMigDeviceHandle(gpu));
    EXPECT_FALSE(is_mig);
  }
}

TEST_F(SimFactsTest, DevicePciMemoryAndCompute) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  for (unsigned i = 0; i < gpus_.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("GPU ", i));
    const sim::Gpu& want = machine_.gpus[i];
    const Device gpu = gpus_[i];
    GPULET_ASSERT_OK_AND_ASSIGN(pci, library_->DeviceGetPciInfo(gpu));
    EXPECT_EQ(pci.bus_id, want.bus_id);
    EXPECT_EQ(pci.bus_id_legacy, want.bus_id.substr(4));
    EXPECT_EQ(
        absl::StrFormat("%08X:%02X:%02X.0", pci.domain, pci.bus, pci.device),
        want.bus_id);
    EXPECT_EQ(pci.pci_device_id, want.pci_device_id);
    EXPECT_EQ(pci.pci_subsystem_id, want.pci_subsystem_id);
    GPULET_ASSERT_OK_AND_ASSIGN(memory, library_->DeviceGetMemoryInfo(gpu));
    EXPECT_EQ(memory.total, want.memory_total);
    EXPECT_EQ(memory.reserved, want.memory_reserved);
    EXPECT_EQ(memory.used, want.memory_used);
    EXPECT_EQ(memory.free, want.memory_total - want.memory_used);
    GPULET_ASSERT_OK_AND_ASSIGN(cc,
                                library_->DeviceGetCudaComputeCapability(gpu));
    EXPECT_EQ(cc.major, want.cc_major);
    EXPECT_EQ(cc.minor, want.cc_minor);
    EXPECT_EQ(cc.major, 9);
    GPULET_ASSERT_OK_AND_ASSIGN(brand, library_->DeviceGetBrand(gpu));
    EXPECT_EQ(brand, want.brand);
    GPULET_ASSERT_OK_AND_ASSIGN(arch, library_->DeviceGetArchitecture(gpu));
    EXPECT_EQ(arch,
              static_cast<nvmlDeviceArchitecture_t>(NVML_DEVICE_ARCH_HOPPER));
    GPULET_ASSERT_OK_AND_ASSIGN(numa, library_->DeviceGetNumaNodeId(gpu));
    EXPECT_EQ(static_cast<int>(numa), want.numa_node);
    GPULET_ASSERT_OK_AND_ASSIGN(cpus, library_->DeviceGetCpuAffinity(gpu));
    std::vector<unsigned> want_cpus = want.cpu_affinity;
    std::sort(want_cpus.begin(), want_cpus.end());
    EXPECT_EQ(cpus, want_cpus);
    EXPECT_EQ(cpus.size(), 112u);  // 56 cores, hyper-threaded
    GPULET_ASSERT_OK_AND_ASSIGN(events,
                                library_->DeviceGetSupportedEventTypes(gpu));
    EXPECT_EQ(events, want.supported_events);
  }
}

TEST_F(SimFactsTest, Topology) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  for (unsigned a = 0; a < gpus_.size(); ++a) {
    for (unsigned b = 0; b < gpus_.size(); ++b) {
      if (a == b) continue;
      SCOPED_TRACE(absl::StrCat("GPU ", a, " to GPU ", b));
      GPULET_ASSERT_OK_AND_ASSIGN(
          level, library_->DeviceGetTopologyCommonAncestor(gpus_[a], gpus_[b]));
      EXPECT_EQ(level, machine_.topology[a][b]);
      GPULET_ASSERT_OK_AND_ASSIGN(
          p2p, library_->DeviceGetP2PStatus(gpus_[a], gpus_[b],
                                            NVML_P2P_CAPS_INDEX_NVLINK));
      EXPECT_EQ(p2p, NVML_P2P_STATUS_OK);  // all on one NVSwitch fabric
    }
  }
}

TEST_F(SimFactsTest, NvLinks) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  for (unsigned i = 0; i < gpus_.size(); ++i) {
    const sim::Gpu& want = machine_.gpus[i];
    ASSERT_EQ(want.nvlinks.size(), 18u);
    for (unsigned link = 0; link < want.nvlinks.size(); ++link) {
      SCOPED_TRACE(absl::StrCat("GPU ", i, " link ", link));
      GPULET_ASSERT_OK_AND_ASSIGN(
          active, library_->DeviceGetNvLinkState(gpus_[i], link));
      EXPECT_EQ(active, want.nvlinks[link].active);
      GPULET_ASSERT_OK_AND_ASSIGN(
          type, library_->DeviceGetNvLinkRemoteDeviceType(gpus_[i], link));
      EXPECT_EQ(type, NVML_NVLINK_DEVICE_TYPE_SWITCH);
      GPULET_ASSERT_OK_AND_ASSIGN(
          remote, library_->DeviceGetNvLinkRemotePciInfo(gpus_[i], link));
      EXPECT_EQ(remote.bus_id, want.nvlinks[link].remote_bus_id);
    }
  }
  // One past the last link: the error names GPU and link.
  const absl::StatusOr<bool> past =
      library_->DeviceGetNvLinkState(gpus_[5], 18);
  ASSERT_FALSE(past.ok());
  EXPECT_THAT(Message(past.status()),
              StartsWith("nvmlDeviceGetNvLinkState(GPU 5 link 18): "));
}

TEST_F(SimFactsTest, FabricInfoFromTheNewestStruct) {
  ASSERT_NO_FATAL_FAILURE(Load("gb200-nvl"));
  for (size_t i = 0; i < gpus_.size(); ++i) {
    GPULET_ASSERT_OK_AND_ASSIGN(fabric,
                                library_->DeviceGetGpuFabricInfo(gpus_[i]));
    EXPECT_EQ(fabric.version, 3u);
    EXPECT_EQ(fabric.cluster_uuid, "190abd46-89ce-5965-bb4c-944992ac3cd5");
    EXPECT_EQ(fabric.clique_id, 32766u);
    EXPECT_EQ(fabric.state, NVML_GPU_FABRIC_STATE_COMPLETED);
    EXPECT_EQ(fabric.status, NVML_SUCCESS);
    EXPECT_EQ(fabric.health_summary, NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY);
  }
}

TEST_F(SimFactsTest, FabricInfoNotSupportedOutsideAFabric) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-b200"));
  const absl::StatusOr<GpuFabricInfo> fabric =
      library_->DeviceGetGpuFabricInfo(gpus_[0]);
  ASSERT_FALSE(fabric.ok());
  EXPECT_THAT(Message(fabric.status()),
              StartsWith("nvmlDeviceGetGpuFabricInfoV(GPU 0): "));
  EXPECT_THAT(Message(fabric.status()), HasSubstr("NVML_ERROR_NOT_SUPPORTED"));
}

TEST_F(SimFactsTest, FullGpuMigFacts) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  const sim::Gpu& want = machine_.gpus[0];
  const absl::StatusOr<MigMode> mode = library_->DeviceGetMigMode(gpus_[0]);
  if (want.mig_capable) {
    ASSERT_TRUE(mode.ok()) << mode.status();
    EXPECT_EQ(mode->current, want.mig_enabled);
    EXPECT_EQ(mode->pending, want.mig_pending);
    // NVML reports zero while MIG is disabled.
    GPULET_ASSERT_OK_AND_ASSIGN(max,
                                library_->DeviceGetMaxMigDeviceCount(gpus_[0]));
    EXPECT_EQ(max, want.mig_enabled ? want.max_mig_devices : 0u);
  } else {
    EXPECT_FALSE(mode.ok());
  }
}

// --------------------------------------------------------------- MIG

// Finds the profile the MIG device's GPU instance uses.
const sim::GpuInstanceProfile* GiProfile(const sim::Gpu& gpu,
                                         const sim::MigDevice& mig) {
  for (const sim::GpuInstanceProfile& p : gpu.gi_profiles) {
    if (p.id == mig.gpu_instance_profile_id) return &p;
  }
  return nullptr;
}

TEST_F(SimFactsTest, MigDevices) {
  ASSERT_NO_FATAL_FAILURE(Load("a100-mig"));
  for (unsigned g = 0; g < gpus_.size(); ++g) {
    const sim::Gpu& want = machine_.gpus[g];
    GPULET_ASSERT_OK_AND_ASSIGN(mode, library_->DeviceGetMigMode(gpus_[g]));
    EXPECT_EQ(mode.current, want.mig_enabled) << "GPU " << g;
    if (!want.mig_enabled) continue;
    GPULET_ASSERT_OK_AND_ASSIGN(max,
                                library_->DeviceGetMaxMigDeviceCount(gpus_[g]));
    EXPECT_EQ(max, want.max_mig_devices);
    for (unsigned m = 0; m < want.mig_devices.size(); ++m) {
      SCOPED_TRACE(absl::StrCat("GPU ", g, " MIG device ", m));
      const sim::MigDevice& mig_want = want.mig_devices[m];
      GPULET_ASSERT_OK_AND_ASSIGN(
          mig, library_->DeviceGetMigDeviceHandleByIndex(gpus_[g], m));
      GPULET_ASSERT_OK_AND_ASSIGN(uuid, library_->DeviceGetUuid(mig));
      EXPECT_EQ(uuid, mig_want.uuid);
      GPULET_ASSERT_OK_AND_ASSIGN(by_uuid,
                                  library_->DeviceGetHandleByUuid(uuid));
      EXPECT_EQ(by_uuid, mig);
      GPULET_ASSERT_OK_AND_ASSIGN(is_mig,
                                  library_->DeviceIsMigDeviceHandle(mig));
      EXPECT_TRUE(is_mig);
      GPULET_ASSERT_OK_AND_ASSIGN(
          parent, library_->DeviceGetDeviceHandleFromMigDeviceHandle(mig));
      EXPECT_EQ(parent, gpus_[g]);
      GPULET_ASSERT_OK_AND_ASSIGN(gi_id, library_->DeviceGetGpuInstanceId(mig));
      EXPECT_EQ(gi_id, mig_want.gpu_instance_id);
      GPULET_ASSERT_OK_AND_ASSIGN(ci_id,
                                  library_->DeviceGetComputeInstanceId(mig));
      EXPECT_EQ(ci_id, mig_want.compute_instance_id);

      const sim::GpuInstanceProfile* gi_want = GiProfile(want, mig_want);
      ASSERT_NE(gi_want, nullptr);
      GPULET_ASSERT_OK_AND_ASSIGN(attributes,
                                  library_->DeviceGetAttributes(mig));
      EXPECT_EQ(attributes.gpuInstanceSliceCount, gi_want->slice_count);
      EXPECT_EQ(attributes.memorySizeMB, gi_want->memory_size_mb);
      GPULET_ASSERT_OK_AND_ASSIGN(
          profile,
          library_->DeviceGetGpuInstanceProfileInfo(gpus_[g], gi_want->id));
      EXPECT_EQ(profile.id, gi_want->profile_id);
      EXPECT_EQ(profile.slice_count, gi_want->slice_count);
      EXPECT_EQ(profile.memory_size_mb, gi_want->memory_size_mb);
      EXPECT_THAT(profile.name, HasSubstr(gi_want->name));

      GPULET_ASSERT_OK_AND_ASSIGN(
          gi, library_->DeviceGetGpuInstanceById(gpus_[g], gi_id));
      GPULET_ASSERT_OK_AND_ASSIGN(gi_info, library_->GpuInstanceGetInfo(gi));
      EXPECT_EQ(gi_info.device, gpus_[g]);
      EXPECT_EQ(gi_info.id, mig_want.gpu_instance_id);
      EXPECT_EQ(gi_info.profile_id, profile.id);
      EXPECT_EQ(gi_info.placement_start, mig_want.gi_placement_start);
      EXPECT_EQ(gi_info.placement_size, mig_want.gi_placement_size);

      GPULET_ASSERT_OK_AND_ASSIGN(
          ci, library_->GpuInstanceGetComputeInstanceById(gi, ci_id));
      GPULET_ASSERT_OK_AND_ASSIGN(ci_info,
                                  library_->ComputeInstanceGetInfo(ci));
      EXPECT_EQ(ci_info.device, gpus_[g]);
      EXPECT_EQ(ci_info.gpu_instance, gi);
      EXPECT_EQ(ci_info.id, mig_want.compute_instance_id);
      GPULET_ASSERT_OK_AND_ASSIGN(
          ci_profile, library_->GpuInstanceGetComputeInstanceProfileInfo(
                          gi, mig_want.compute_instance_profile_id,
                          NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED));
      EXPECT_EQ(ci_profile.id, ci_info.profile_id);
      EXPECT_GT(ci_profile.slice_count, 0u);
    }
    // The slot after the last MIG device is empty; the error says where.
    const unsigned empty = static_cast<unsigned>(want.mig_devices.size());
    if (empty < want.max_mig_devices) {
      const absl::StatusOr<Device> none =
          library_->DeviceGetMigDeviceHandleByIndex(gpus_[g], empty);
      ASSERT_FALSE(none.ok());
      EXPECT_THAT(
          Message(none.status()),
          StartsWith(absl::StrCat("nvmlDeviceGetMigDeviceHandleByIndex(GPU ", g,
                                  " MIG device ", empty, "): ")));
    }
  }
}

// --------------------------------------------------------------- faults

class SimControlTest : public SimFactsTest {
 protected:
  void LoadWithControl(const std::string& profile) {
    socket_ = dir_.path() + "/sim.sock";
    ::setenv("GPULET_SIM_SOCKET", socket_.c_str(), 1);
    Load(profile);
  }
  // Sends `line`. The simulator built with these tests always has its
  // control channel, so no answer is a failure, not a reason to skip (a
  // skip here would only leave this helper).
  void Control(const std::string& line) {
    absl::StatusOr<std::string> reply = SimControl(socket_, line);
    ASSERT_TRUE(reply.ok()) << line << ": " << reply.status();
    ASSERT_THAT(*reply, StartsWith("ok")) << line;
  }

  TempDir dir_;
  std::string socket_;
};

// Control() from a test body: stop the test if it failed.
#define GPULET_SIM_CONTROL(line)   \
  do {                             \
    Control(line);                 \
    if (HasFatalFailure()) return; \
  } while (0)

TEST_F(SimControlTest, XidEventIsDeliveredAndTimeoutIsDeadlineExceeded) {
  ASSERT_NO_FATAL_FAILURE(LoadWithControl("dgx-h100"));
  GPULET_ASSERT_OK_AND_ASSIGN(events, library_->EventSetCreate());
  GPULET_ASSERT_OK(events->Register(
      gpus_[1],
      nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError));
  const absl::StatusOr<Event> nothing = events->Wait(0);
  EXPECT_TRUE(absl::IsDeadlineExceeded(nothing.status())) << nothing.status();
  EXPECT_THAT(Message(nothing.status()), StartsWith("nvmlEventSetWait_v2: "));
  EXPECT_THAT(Message(nothing.status()), HasSubstr("[NVML_ERROR_TIMEOUT]"));

  GPULET_SIM_CONTROL("xid 1 48");
  GPULET_ASSERT_OK_AND_ASSIGN(event, events->Wait(10000));
  EXPECT_EQ(event.device, gpus_[1]);
  EXPECT_EQ(event.type, static_cast<uint64_t>(nvmlEventTypeXidCriticalError));
  EXPECT_EQ(event.data, 48u);
  EXPECT_EQ(event.gpu_instance_id, 0xFFFFFFFFu);
  EXPECT_EQ(event.compute_instance_id, 0xFFFFFFFFu);
}

TEST_F(SimControlTest, LostGpuErrorsNameTheGpu) {
  ASSERT_NO_FATAL_FAILURE(LoadWithControl("dgx-h100"));
  GPULET_SIM_CONTROL("lose 3");
  const absl::StatusOr<MemoryInfo> memory =
      library_->DeviceGetMemoryInfo(gpus_[3]);
  ASSERT_FALSE(memory.ok());
  EXPECT_TRUE(absl::IsUnavailable(memory.status())) << memory.status();
  EXPECT_THAT(Message(memory.status()),
              StartsWith("nvmlDeviceGetMemoryInfo_v2(GPU 3): GPU is lost "
                         "[NVML_ERROR_GPU_IS_LOST]"));
  EXPECT_TRUE(library_->DeviceGetMemoryInfo(gpus_[2]).ok());
  GPULET_SIM_CONTROL("restore 3");
  EXPECT_TRUE(library_->DeviceGetMemoryInfo(gpus_[3]).ok());
}

}  // namespace
}  // namespace gpulet::nvml
