#include "src/base/metrics/gpulet_metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::metrics {
namespace {

using ::testing::HasSubstr;

TEST(GpuletMetricsTest, RegistersEveryFamilyOnce) {
  Registry registry;
  absl::StatusOr<GpuletMetrics> m = GpuletMetrics::Register(registry);
  ASSERT_TRUE(m.ok()) << m.status();
  for (Family* f : {m->device_healthy, m->gpu_healthy, m->xid_events,
                    m->health_transitions, m->allocations, m->allocated_devices,
                    m->registrations, m->kubelet_restarts, m->plugin_restarts,
                    m->config_reloads, m->passthrough_viable}) {
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->name().rfind("gpulet_", 0), 0u) << f->name();
  }
  absl::StatusOr<GpuletMetrics> again = GpuletMetrics::Register(registry);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->xid_events, m->xid_events);
}

TEST(GpuletMetricsTest, HealthOnlyLeavesThePluginsFamiliesOut) {
  Registry registry;
  absl::StatusOr<GpuletMetrics> m = GpuletMetrics::RegisterHealth(registry);
  ASSERT_TRUE(m.ok()) << m.status();
  for (Family* f : {m->gpu_healthy, m->xid_events, m->health_transitions,
                    m->config_reloads}) {
    EXPECT_NE(f, nullptr);
  }
  for (Family* f : {m->device_healthy, m->allocations, m->allocated_devices,
                    m->registrations, m->kubelet_restarts, m->plugin_restarts,
                    m->passthrough_viable}) {
    EXPECT_EQ(f, nullptr);
  }
  EXPECT_EQ(registry.Find("gpulet_allocations_total"), nullptr);
  EXPECT_NE(registry.Find("gpulet_xid_events_total"), nullptr);
}

TEST(GpuletMetricsTest, ExampleScrape) {
  Registry registry;
  GpuletMetrics m = *GpuletMetrics::Register(registry);
  m.device_healthy->Set({"nvidia.com/gpu", "GPU-a"}, HealthValue(false));
  m.gpu_healthy->Set({"GPU-a"}, HealthValue(false));
  m.xid_events->Add({"GPU-a", "79"});
  m.health_transitions->Add({kDirectionUnhealthy, "xid"});
  m.allocations->Add({"nvidia.com/gpu"});
  m.allocated_devices->Add({"nvidia.com/gpu"}, 2);
  m.registrations->Add({"nvidia.com/gpu", kResultOk});
  m.kubelet_restarts->Add({});
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("# TYPE gpulet_device_healthy gauge\n"
                              "gpulet_device_healthy{resource=\"nvidia.com/"
                              "gpu\",device=\"GPU-a\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("gpulet_xid_events_total{gpu=\"GPU-a\",xid="
                              "\"79\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpulet_health_transitions_total{direction="
                              "\"unhealthy\",reason=\"xid\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpulet_allocated_devices_total{resource="
                              "\"nvidia.com/gpu\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("gpulet_registrations_total{resource=\"nvidia."
                              "com/gpu\",result=\"ok\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\ngpulet_kubelet_restarts_total 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE gpulet_plugin_restarts_total counter\n"));
}

}  // namespace
}  // namespace gpulet::metrics
