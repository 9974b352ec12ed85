#include "src/dra/kubelet/device_health.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::dra {
namespace {

DeviceHealth Health(const std::string& device, bool healthy,
                    const std::string& message = "") {
  return {.device = device,
          .healthy = healthy,
          .message = message,
          .updated_unix = 0,
          .fault = {}};
}

TEST(DeviceHealthBoardTest, ListenersSeeOnlyChanges) {
  DeviceHealthBoard board;
  std::vector<std::vector<DeviceHealth>> seen;
  int id = board.Subscribe([&](const std::vector<DeviceHealth>& changed) {
    seen.push_back(changed);
  });
  board.Set({Health("gpu-0", true), Health("gpu-1", true)});
  board.Set({Health("gpu-0", true), Health("gpu-1", false, "Xid 79")});
  board.Set({Health("gpu-1", false, "Xid 79")});
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].size(), 2u);
  EXPECT_EQ(seen[1],
            std::vector<DeviceHealth>{Health("gpu-1", false, "Xid 79")});
  EXPECT_EQ(board.Unhealthy(), std::set<std::string>{"gpu-1"});
  EXPECT_EQ(board.version(), 2u);
  board.Unsubscribe(id);
  board.Set({Health("gpu-1", true)});
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_TRUE(board.Unhealthy().empty());
}

TEST(DeviceHealthBoardTest, AFaultChangeIsAChange) {
  DeviceHealthBoard board;
  DeviceHealth xid = Health("gpu-1", false, "GPU 1 unhealthy");
  xid.fault = {.xid = 48, .lost = false};
  board.Set({Health("gpu-0", false, "lost"), xid});
  EXPECT_EQ(board.version(), 1u);
  DeviceHealth lost = xid;
  lost.fault = {.xid = 79, .lost = true};
  board.Set({lost});
  EXPECT_EQ(board.version(), 2u);
  EXPECT_EQ(board.Faults(),
            (std::map<std::string, DeviceFault>{
                {"gpu-0", {}}, {"gpu-1", {.xid = 79, .lost = true}}}));
  board.Set({Health("gpu-0", true)});
  EXPECT_EQ(board.Faults().size(), 1u);
}

TEST(DeviceHealthBoardTest, WaitForChangeWakesOnSetAndClose) {
  DeviceHealthBoard board;
  uint64_t got = 0;
  std::thread waiter(
      [&] { got = board.WaitForChange(0, absl::InfiniteDuration()); });
  board.Set({Health("gpu-0", false, "lost")});
  waiter.join();
  EXPECT_EQ(got, 1u);
  std::thread closed(
      [&] { got = board.WaitForChange(1, absl::InfiniteDuration()); });
  board.Close();
  closed.join();
  EXPECT_TRUE(board.closed());
}

}  // namespace
}  // namespace gpulet::dra
