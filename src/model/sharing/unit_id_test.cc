#include "src/model/sharing/unit_id.h"

#include <string>

#include "gtest/gtest.h"

namespace gpulet::sharing {
namespace {

TEST(MemoryUnitId, RoundTrips) {
  EXPECT_EQ(MemoryUnitId("GPU-a", 7), "GPU-a::m7");
  std::string uuid;
  int64_t k = -1;
  ASSERT_TRUE(ParseMemoryUnitId("GPU-a::m12", &uuid, &k));
  EXPECT_EQ(uuid, "GPU-a");
  EXPECT_EQ(k, 12);
  for (const char* bad : {"GPU-a", "GPU-a::m", "::m1", "GPU-a::1", "GPU-a::m1x",
                          "GPU-a::m-1", "GPU-a::m9999999999"}) {
    EXPECT_FALSE(ParseMemoryUnitId(bad, &uuid, &k)) << bad;
  }
}

}  // namespace
}  // namespace gpulet::sharing
