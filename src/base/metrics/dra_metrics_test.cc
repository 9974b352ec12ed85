#include "src/base/metrics/dra_metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::metrics {
namespace {

using ::testing::HasSubstr;

TEST(DraMetricsTest, RegistersEveryFamilyWithItsCountersAtZero) {
  Registry registry;
  absl::StatusOr<DraMetrics> m = DraMetrics::Register(registry);
  ASSERT_TRUE(m.ok()) << m.status();
  for (Family* f :
       {m->prepares, m->unprepares, m->prepare_seconds, m->unprepare_seconds,
        m->devices, m->slice_publishes, m->status_writes}) {
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->name().rfind("gpulet_dra_", 0), 0u) << f->name();
  }
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("gpulet_dra_prepares_total{result=\"ok\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("gpulet_dra_claim_status_writes_total{result=\"gone\"} "
                        "0\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE gpulet_dra_prepare_duration_seconds "
                              "histogram\n"));
  absl::StatusOr<DraMetrics> again = DraMetrics::Register(registry);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->devices, m->devices);
}

TEST(DraMetricsTest, DurationsLandInTheirBuckets) {
  Registry registry;
  absl::StatusOr<DraMetrics> m = DraMetrics::Register(registry);
  ASSERT_TRUE(m.ok());
  m->prepare_seconds->Observe({}, 0.3);
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("gpulet_dra_prepare_duration_seconds_bucket{le="
                              "\"0.25\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("gpulet_dra_prepare_duration_seconds_bucket{le="
                              "\"0.5\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpulet_dra_prepare_duration_seconds_count 1\n"));
}

}  // namespace
}  // namespace gpulet::metrics
