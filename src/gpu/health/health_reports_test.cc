#include "src/gpu/health/health_reports.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace gpulet::health {
namespace {

HealthEvent Event(int gpu, std::optional<uint32_t> gi,
                  std::optional<uint32_t> ci, std::string reason = "") {
  HealthEvent event;
  event.gpu_index = gpu;
  event.gpu_instance_id = gi;
  event.compute_instance_id = ci;
  event.reason = std::move(reason);
  return event;
}

TEST(HealthReportsTest, EachSubjectIsReportedOnceAndAWholeGpuCoversItsMig) {
  struct Case {
    std::string name;
    std::vector<HealthEvent> before;
    HealthEvent event;
    bool added;
  };
  const std::vector<Case> cases = {
      {"first report", {}, Event(0, {}, {}), true},
      {"same GPU again", {Event(0, {}, {})}, Event(0, {}, {}), false},
      {"another GPU", {Event(0, {}, {})}, Event(1, {}, {}), true},
      {"MIG instance of a reported GPU",
       {Event(0, {}, {})},
       Event(0, 1, 0),
       false},
      {"whole GPU after its MIG instance",
       {Event(0, 1, 0)},
       Event(0, {}, {}),
       true},
      {"another MIG instance", {Event(0, 1, 0)}, Event(0, 2, 0), true},
      {"same MIG instance", {Event(0, 1, 0)}, Event(0, 1, 0), false},
      {"GPU instance only", {Event(0, 1, 0)}, Event(0, 1, {}), true},
  };
  for (const Case& c : cases) {
    HealthReports reports;
    for (const HealthEvent& e : c.before) ASSERT_TRUE(reports.Add(e));
    EXPECT_EQ(reports.Add(c.event), c.added) << c.name;
  }
}

TEST(HealthReportsTest, ExportIsOrderedWithReasonsAndForgetTakesTheWholeGpu) {
  HealthReports reports;
  reports.Add(Event(2, {}, {}, "Xid 48"));
  reports.Add(Event(0, 3, 0, "Xid 94 on MIG"));
  reports.Restore(Event(0, {}, {}, "carried over"));
  reports.Add(Event(1, 1, {}, "Xid 13"));

  std::vector<HealthEvent> all = reports.Export();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].gpu_index, 0);
  EXPECT_EQ(all[0].gpu_instance_id, std::nullopt);
  EXPECT_EQ(all[0].reason, "carried over");
  EXPECT_EQ(all[1].gpu_index, 0);
  EXPECT_EQ(all[1].gpu_instance_id, 3u);
  EXPECT_EQ(all[1].compute_instance_id, 0u);
  EXPECT_EQ(all[1].reason, "Xid 94 on MIG");
  EXPECT_EQ(all[2].gpu_index, 1);
  EXPECT_EQ(all[2].compute_instance_id, std::nullopt);
  EXPECT_EQ(all[3].gpu_index, 2);
  EXPECT_EQ(all[3].reason, "Xid 48");

  reports.ForgetGpu(0);
  all = reports.Export();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].gpu_index, 1);
  EXPECT_TRUE(reports.Add(Event(0, 3, 0)));
}

TEST(HealthReportsTest, Subject) {
  EXPECT_EQ(EventSubject(Event(3, {}, {})), "GPU 3");
  EXPECT_EQ(EventSubject(Event(3, 1, {})), "GPU 3 (GPU instance 1)");
  EXPECT_EQ(EventSubject(Event(3, {}, 2)), "GPU 3 (compute instance 2)");
  EXPECT_EQ(EventSubject(Event(3, 1, 0)),
            "GPU 3 (GPU instance 1, compute instance 0)");
}

}  // namespace
}  // namespace gpulet::health
