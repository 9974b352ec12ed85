#include "src/plugin/daemon/health_book.h"

#include "gtest/gtest.h"

namespace gpulet::daemon {
namespace {

health::HealthEvent Unhealthy(int gpu, std::optional<unsigned> gi = {},
                              std::optional<unsigned> ci = {}) {
  health::HealthEvent e;
  e.gpu_index = gpu;
  e.gpu_instance_id = gi;
  e.compute_instance_id = ci;
  e.xid = 79;
  e.reason = "Xid 79";
  return e;
}

pluginapi::Device Dev(const std::string& id, int gpu, int gi = -1,
                      int ci = -1) {
  pluginapi::Device d;
  d.id = id;
  d.gpu_index = gpu;
  d.gpu_instance_id = gi;
  d.compute_instance_id = ci;
  return d;
}

TEST(HealthBookTest, WholeGpuEntryMarksEveryDeviceOfThatGpuByUuid) {
  HealthBook book;
  EXPECT_TRUE(book.Record("GPU-b", Unhealthy(1)));
  EXPECT_FALSE(book.Record("GPU-b", Unhealthy(1)));  // already recorded
  // After a reload GPU-b may have another index; the UUID decides.
  std::map<int, std::string> uuids = {{0, "GPU-a"}, {3, "GPU-b"}};
  std::vector<pluginapi::Device> devices = {Dev("a::0", 0), Dev("b::0", 3),
                                            Dev("b::1", 3)};
  book.Apply(uuids, devices);
  EXPECT_TRUE(devices[0].healthy);
  EXPECT_FALSE(devices[1].healthy);
  EXPECT_FALSE(devices[2].healthy);
}

TEST(HealthBookTest, MigEntryMarksOnlyItsInstance) {
  HealthBook book;
  book.Record("GPU-a", Unhealthy(0, 1, 0));
  std::vector<pluginapi::Device> devices = {Dev("mig1", 0, 1, 0),
                                            Dev("mig2", 0, 2, 0), Dev("a", 0)};
  book.Apply({{0, "GPU-a"}}, devices);
  EXPECT_FALSE(devices[0].healthy);
  EXPECT_TRUE(devices[1].healthy);
  EXPECT_TRUE(devices[2].healthy);
}

TEST(HealthBookTest, RecoveryClearsTheGpuAndRetainDropsGoneGpus) {
  HealthBook book;
  book.Record("GPU-a", Unhealthy(0, 1, 0));
  book.Record("GPU-a", Unhealthy(0));
  book.Record("GPU-b", Unhealthy(1));
  health::HealthEvent healthy;
  healthy.gpu_index = 0;
  healthy.healthy = true;
  EXPECT_TRUE(book.Record("GPU-a", healthy));
  EXPECT_FALSE(book.Record("GPU-a", healthy));
  book.Retain({{0, "GPU-a"}});
  EXPECT_TRUE(book.empty());
}

TEST(HealthBookTest, KeepOnlyDropsTheOtherCauses) {
  HealthBook book;
  health::HealthEvent lost = Unhealthy(0);
  lost.cause = health::HealthCause::kDiscoveryFailed;
  book.Record("GPU-a", lost);
  book.Record("GPU-b", Unhealthy(1));
  book.KeepOnly(health::HealthCause::kDiscoveryFailed);
  std::vector<pluginapi::Device> devices = {Dev("a", 0), Dev("b", 1)};
  book.Apply({{0, "GPU-a"}, {1, "GPU-b"}}, devices);
  EXPECT_FALSE(devices[0].healthy);
  EXPECT_TRUE(devices[1].healthy);
}

}  // namespace
}  // namespace gpulet::daemon
