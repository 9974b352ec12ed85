#include "src/gpu/vfio/gpu_selector.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::vfio {
namespace {

using ::testing::HasSubstr;

Inventory TwoGpus() {
  Inventory inv;
  for (const char* address : {"0000:1b:00.0", "0000:9d:00.0"}) {
    Gpu gpu;
    gpu.function.address = address;
    inv.gpus.push_back(gpu);
  }
  return inv;
}

TEST(SelectGpuTest, IndexAddressUuid) {
  const Inventory inv = TwoGpus();
  const std::map<std::string, std::string> uuids = {
      {"GPU-9605369A-4CEF-521F-904B-CAFB54DF34D0", "0000:1b:00.0"}};
  EXPECT_EQ((*SelectGpu(inv, "1", uuids))->function.address, "0000:9d:00.0");
  EXPECT_EQ((*SelectGpu(inv, "9D:00.0", uuids))->function.address,
            "0000:9d:00.0");
  EXPECT_EQ((*SelectGpu(inv, "00000000:1B:00.0", uuids))->function.address,
            "0000:1b:00.0");
  EXPECT_EQ((*SelectGpu(inv, "GPU-9605369a-4cef-521f-904b-cafb54df34d0", uuids))
                ->function.address,
            "0000:1b:00.0");
}

TEST(SelectGpuTest, UnknownArgumentsListTheGpus) {
  const Inventory inv = TwoGpus();
  for (const char* arg :
       {"2", "0000:ff:00.0", "GPU-00000000-0000-0000-0000-000000000000",
        "gpu zero", "-1", ""}) {
    absl::StatusOr<const Gpu*> gpu = SelectGpu(inv, arg, {});
    ASSERT_FALSE(gpu.ok()) << arg;
    EXPECT_EQ(gpu.status().code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(std::string(gpu.status().message()),
                HasSubstr(std::string("GPU \"") + arg + "\": "));
    EXPECT_THAT(std::string(gpu.status().message()),
                HasSubstr("(NVIDIA GPUs: 0 0000:1b:00.0, 1 0000:9d:00.0)"));
  }
}

}  // namespace
}  // namespace gpulet::vfio
