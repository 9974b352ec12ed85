// DynamicLibrary through the NVML simulator (sim), loaded by the
// same dlopen path as the real driver. The machine is chosen with
// GPULET_SIM_MACHINE before Init(); ctest runs every test in its own process,
// so each starts with a fresh simulator.
#include "src/gpu/nvml/dynamic_library.h"

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/gpu/testing/sim_test_support.h"

namespace gpulet::nvml {
namespace {

namespace fs = std::filesystem;
using ::gpulet::nvml::simtest::Message;
using ::gpulet::nvml::simtest::SimLibrary;
using ::gpulet::nvml::simtest::SimTest;
using ::gpulet::nvml::simtest::TempDir;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// ------------------------------------------------------------ loading

TEST_F(SimTest, ExplicitPathLoadsTheSimulator) {
  LoadOptions options;
  options.library_path = SimLibrary();
  GPULET_ASSERT_OK_AND_ASSIGN(library, OpenLibrary(options));
  EXPECT_EQ(library->Path(), SimLibrary());
}

TEST_F(SimTest, DriverRootFindsTheLibrary) {
  TempDir root;
  root.Link("usr/lib64/libnvidia-ml.so.1", SimLibrary());
  LoadOptions options;
  options.driver_root = root.path();
  GPULET_ASSERT_OK_AND_ASSIGN(library, OpenLibrary(options));
  EXPECT_EQ(library->Path(), root.path() + "/usr/lib64/libnvidia-ml.so.1");
}

TEST_F(SimTest, DriverRootSkipsANonNvmlCandidate) {
  TempDir root;
  root.Link("usr/lib64/libnvidia-ml.so.1", "/lib/x86_64-linux-gnu/libz.so.1");
  root.Link("lib64/libnvidia-ml.so.1", SimLibrary());
  LoadOptions options;
  options.driver_root = root.path();
  GPULET_ASSERT_OK_AND_ASSIGN(library, OpenLibrary(options));
  EXPECT_EQ(library->Path(), root.path() + "/lib64/libnvidia-ml.so.1");
}

TEST(OpenLibrary, EmptyDriverRootIsNotFoundAndNamesTheSearch) {
  TempDir root;
  LoadOptions options;
  options.driver_root = root.path();
  const absl::StatusOr<LibraryPtr> library = OpenLibrary(options);
  ASSERT_FALSE(library.ok());
  EXPECT_TRUE(absl::IsNotFound(library.status())) << library.status();
  const std::string message(library.status().message());
  EXPECT_THAT(message, HasSubstr(root.path() + "/usr/lib64/libnvidia-ml.so.1"));
  EXPECT_THAT(message, HasSubstr(root.path() +
                                 "/lib/aarch64-linux-gnu/libnvidia-ml.so.1"));
}

TEST(OpenLibrary, MissingExplicitPathIsNotFound) {
  LoadOptions options;
  options.library_path = "/nonexistent/gpulet/libnvidia-ml.so.1";
  const absl::StatusOr<LibraryPtr> library = OpenLibrary(options);
  ASSERT_FALSE(library.ok());
  EXPECT_TRUE(absl::IsNotFound(library.status())) << library.status();
  EXPECT_THAT(Message(library.status()),
              HasSubstr("/nonexistent/gpulet/libnvidia-ml.so.1"));
}

TEST(OpenLibrary, WrongLibraryNamesTheMissingSymbol) {
  const std::string libz = "/lib/x86_64-linux-gnu/libz.so.1";
  if (!fs::exists(libz)) GTEST_SKIP() << "no " << libz;
  LoadOptions options;
  options.library_path = libz;
  const absl::StatusOr<LibraryPtr> library = OpenLibrary(options);
  ASSERT_FALSE(library.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(library.status())) << library.status();
  EXPECT_THAT(Message(library.status()), HasSubstr("nvmlInit_v2"));
  EXPECT_THAT(Message(library.status()), HasSubstr(libz));
}

// ------------------------------------------------------------ lifecycle

TEST_F(SimTest, NoDriverFailsInitWithTheNvmlReason) {
  ::setenv("GPULET_SIM_MACHINE", "no-driver", 1);
  LoadOptions options;
  options.library_path = SimLibrary();
  GPULET_ASSERT_OK_AND_ASSIGN(library, OpenLibrary(options));
  const absl::Status init = library->Init();
  EXPECT_TRUE(absl::IsFailedPrecondition(init)) << init;
  EXPECT_THAT(Message(init), StartsWith("nvmlInit"));
  EXPECT_THAT(Message(init), HasSubstr("Driver Not Loaded"));
  EXPECT_THAT(Message(init), HasSubstr("[NVML_ERROR_DRIVER_NOT_LOADED]"));
  // Nothing to shut down after a failed Init.
  EXPECT_TRUE(absl::IsFailedPrecondition(library->Shutdown()));
}

TEST_F(SimTest, InitIsReferenceCounted) {
  LibraryPtr library = OpenSim("dgx-h100");
  ASSERT_NE(library, nullptr);
  GPULET_ASSERT_OK(library->Init());
  GPULET_ASSERT_OK(library->Shutdown());
  EXPECT_TRUE(library->DeviceGetCount().ok());  // still one Init open
  GPULET_ASSERT_OK(library->Shutdown());
  const absl::StatusOr<unsigned> count = library->DeviceGetCount();
  EXPECT_TRUE(absl::IsFailedPrecondition(count.status())) << count.status();
  EXPECT_THAT(Message(count.status()), HasSubstr("NVML_ERROR_UNINITIALIZED"));
  const absl::Status extra = library->Shutdown();
  EXPECT_TRUE(absl::IsFailedPrecondition(extra)) << extra;
  EXPECT_THAT(Message(extra), HasSubstr(SimLibrary()));
}

TEST_F(SimTest, DestructorShutsDownWhatIsStillInitialised) {
  LibraryPtr first = OpenSim("dgx-h100");
  ASSERT_NE(first, nullptr);
  GPULET_ASSERT_OK(first->Init());  // NVML count 2
  LoadOptions options;
  options.library_path = SimLibrary();
  GPULET_ASSERT_OK_AND_ASSIGN(second, OpenLibrary(options));  // shares the copy
  GPULET_ASSERT_OK(second->Init());                           // NVML count 3
  first.reset();                                              // back to 1
  EXPECT_TRUE(second->DeviceGetCount().ok());
  GPULET_ASSERT_OK(second->Shutdown());  // 0
  EXPECT_FALSE(second->DeviceGetCount().ok());
}

// ------------------------------------------------------------ errors

TEST_F(SimTest, UnknownUuidIsNotFoundAndNamed) {
  LibraryPtr library = OpenSim("dgx-h100");
  ASSERT_NE(library, nullptr);
  const std::string uuid = "GPU-00000000-dead-beef-0000-000000000000";
  const absl::StatusOr<Device> device = library->DeviceGetHandleByUuid(uuid);
  ASSERT_FALSE(device.ok());
  EXPECT_TRUE(absl::IsNotFound(device.status())) << device.status();
  EXPECT_THAT(Message(device.status()),
              StartsWith("nvmlDeviceGetHandleByUUID(" + uuid + "): "));
  EXPECT_THAT(Message(device.status()), HasSubstr("[NVML_ERROR_NOT_FOUND]"));
}

TEST_F(SimTest, BadIndexNamesTheGpu) {
  LibraryPtr library = OpenSim("dgx-h100");
  ASSERT_NE(library, nullptr);
  const absl::StatusOr<Device> device = library->DeviceGetHandleByIndex(99);
  ASSERT_FALSE(device.ok());
  EXPECT_THAT(Message(device.status()),
              StartsWith("nvmlDeviceGetHandleByIndex_v2(GPU 99): "));
}

TEST_F(SimTest, MigOnlyCallOnAFullGpuNamesFunctionAndGpu) {
  LibraryPtr library = OpenSim("dgx-h100");
  ASSERT_NE(library, nullptr);
  GPULET_ASSERT_OK_AND_ASSIGN(gpu, library->DeviceGetHandleByIndex(2));
  const absl::StatusOr<unsigned> gi = library->DeviceGetGpuInstanceId(gpu);
  ASSERT_FALSE(gi.ok());
  EXPECT_THAT(Message(gi.status()),
              StartsWith("nvmlDeviceGetGpuInstanceId(GPU 2): "));
  EXPECT_THAT(Message(gi.status()), HasSubstr("[NVML_ERROR_"));
}

TEST_F(SimTest, ErrorOnAMigHandleNamesItsUuid) {
  LibraryPtr library = OpenSim("a100-mig");
  ASSERT_NE(library, nullptr);
  GPULET_ASSERT_OK_AND_ASSIGN(gpu, library->DeviceGetHandleByIndex(0));
  GPULET_ASSERT_OK_AND_ASSIGN(mig,
                              library->DeviceGetMigDeviceHandleByIndex(gpu, 0));
  GPULET_ASSERT_OK_AND_ASSIGN(uuid, library->DeviceGetUuid(mig));
  // A MIG device has no MIG devices of its own.
  const absl::StatusOr<Device> nested =
      library->DeviceGetMigDeviceHandleByIndex(mig, 0);
  ASSERT_FALSE(nested.ok());
  EXPECT_THAT(Message(nested.status()),
              StartsWith("nvmlDeviceGetMigDeviceHandleByIndex(" + uuid +
                         " MIG device 0): "));
}

}  // namespace
}  // namespace gpulet::nvml
