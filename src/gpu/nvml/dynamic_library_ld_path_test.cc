// Driver root "/" asks the dynamic linker first, so LD_LIBRARY_PATH works as
// it does for NVIDIA's plugin (old DaemonSets point it at
// /usr/local/nvidia/lib64). ctest runs this binary with LD_LIBRARY_PATH set
// to the simulator's directory; run by hand without it, the test skips.
#include <stdlib.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/gpu/nvml/dynamic_library.h"

namespace gpulet::nvml {
namespace {

TEST(OpenLibrary, HostRootHonoursLdLibraryPath) {
  const char* ld_path = ::getenv("LD_LIBRARY_PATH");
  if (ld_path == nullptr ||
      std::string(ld_path).find(GPULET_SIM_LIB_DIR) == std::string::npos) {
    GTEST_SKIP() << "LD_LIBRARY_PATH does not name " << GPULET_SIM_LIB_DIR;
  }
  LoadOptions options;  // driver_root "/"
  absl::StatusOr<LibraryPtr> library = OpenLibrary(options);
  ASSERT_TRUE(library.ok()) << library.status();
  // The bare name was searched; Path() names the file that was found.
  EXPECT_EQ((*library)->Path(),
            std::string(GPULET_SIM_LIB_DIR) + "/libnvidia-ml.so.1");
  ::setenv("GPULET_SIM_MACHINE", "pcie-t4", 1);
  ASSERT_TRUE((*library)->Init().ok());
  EXPECT_TRUE((*library)->DeviceGetCount().ok());
}

}  // namespace
}  // namespace gpulet::nvml
