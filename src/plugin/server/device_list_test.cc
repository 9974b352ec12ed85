#include "src/plugin/server/device_list.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"

namespace gpulet::plugin {
namespace {

using pluginapi::Device;
using pluginapi::DeviceSnapshot;
using pluginapi::DeviceSnapshotPtr;

std::vector<Device> Replicas() {
  // GPU 0 shared three ways, GPU 1 whole.
  return {{"GPU-a::0", true, {0}, "GPU-a", 0, -1, -1, 0, {}},
          {"GPU-a::1", true, {0}, "GPU-a", 0, -1, -1, 1, {}},
          {"GPU-a::2", true, {0}, "GPU-a", 0, -1, -1, 2, {}},
          {"GPU-b", true, {1}, "GPU-b", 1, -1, -1, -1, {}}};
}

TEST(DeviceListTest, StartsAtVersionOneWithTheDevices) {
  DeviceList list(Replicas());
  DeviceSnapshotPtr s = list.Snapshot();
  EXPECT_EQ(s->version, 1u);
  ASSERT_EQ(s->devices.size(), 4u);
  ASSERT_NE(s->Find("GPU-b"), nullptr);
  EXPECT_EQ(s->Find("GPU-b")->gpu_index, 1);
  EXPECT_EQ(s->Find("GPU-c"), nullptr);
}

TEST(DeviceListTest, ReplaceBumpsVersionOnlyOnRealChange) {
  DeviceList list(Replicas());
  list.Replace(Replicas());
  EXPECT_EQ(list.Snapshot()->version, 1u);

  std::vector<Device> moved = Replicas();
  moved[3].numa_nodes = {0};
  list.Replace(moved);
  EXPECT_EQ(list.Snapshot()->version, 2u);
  EXPECT_EQ(list.Snapshot()->devices, moved);

  list.Replace({});
  EXPECT_EQ(list.Snapshot()->version, 3u);
  EXPECT_TRUE(list.Snapshot()->devices.empty());
}

TEST(DeviceListTest, OldSnapshotsStayUnchanged) {
  DeviceList list(Replicas());
  DeviceSnapshotPtr before = list.Snapshot();
  ASSERT_EQ(list.SetGpuHealth(0, false), 3);
  EXPECT_TRUE(before->Find("GPU-a::1")->healthy);
  EXPECT_FALSE(list.Snapshot()->Find("GPU-a::1")->healthy);
}

TEST(DeviceListTest, SetGpuHealthFansOutToEveryReplica) {
  DeviceList list(Replicas());
  EXPECT_EQ(list.SetGpuHealth(0, false), 3);
  DeviceSnapshotPtr s = list.Snapshot();
  EXPECT_EQ(s->version, 2u);
  for (const Device& d : s->devices) {
    EXPECT_EQ(d.healthy, d.gpu_index != 0) << d.id;
  }
  EXPECT_EQ(list.SetGpuHealth(0, false), 0);
  EXPECT_EQ(list.SetGpuHealth(7, false), 0);
  EXPECT_EQ(list.Snapshot()->version, 2u);
  EXPECT_EQ(list.SetGpuHealth(0, true), 3);
  EXPECT_EQ(list.Snapshot()->version, 3u);
}

// GPU 0 in MIG mode: GPU instance 1 with compute instances 0 and 1, GPU
// instance 2 shared two ways; GPU 1 whole, GPU 2 with GPU instance 1.
std::vector<Device> MigDevices() {
  auto mig = [](std::string id, int gpu, int gi, int ci, int replica) {
    Device d;
    d.id = std::move(id);
    d.gpu_index = gpu;
    d.gpu_instance_id = gi;
    d.compute_instance_id = ci;
    d.replica = replica;
    return d;
  };
  return {mig("MIG-a", 0, 1, 0, -1),   mig("MIG-b", 0, 1, 1, -1),
          mig("MIG-c::0", 0, 2, 0, 0), mig("MIG-c::1", 0, 2, 0, 1),
          mig("GPU-1", 1, -1, -1, -1), mig("MIG-d", 2, 1, 0, -1)};
}

std::vector<std::string> UnhealthyIds(const DeviceList& list) {
  std::vector<std::string> ids;
  for (const Device& d : list.Snapshot()->devices) {
    if (!d.healthy) ids.push_back(d.id);
  }
  return ids;
}

TEST(DeviceListTest, SetMigHealthMarksOnlyTheMatchingInstance) {
  struct Case {
    const char* name;
    int gpu, gi, ci;
    std::vector<std::string> want;
  } cases[] = {
      {"one compute instance", 0, 1, 1, {"MIG-b"}},
      {"every compute instance of the GPU instance",
       0,
       1,
       -1,
       {"MIG-a", "MIG-b"}},
      {"every replica of the MIG device", 0, 2, 0, {"MIG-c::0", "MIG-c::1"}},
      {"same instance ids on another GPU", 2, 1, 0, {"MIG-d"}},
      {"no such instance", 0, 3, 0, {}},
      {"full GPUs are never matched", 1, -1, -1, {}},
  };
  for (const Case& c : cases) {
    DeviceList list(MigDevices());
    EXPECT_EQ(list.SetMigHealth(c.gpu, c.gi, c.ci, false),
              static_cast<int>(c.want.size()))
        << c.name;
    EXPECT_EQ(UnhealthyIds(list), c.want) << c.name;
    EXPECT_EQ(list.Snapshot()->version, c.want.empty() ? 1u : 2u) << c.name;
    EXPECT_EQ(list.SetMigHealth(c.gpu, c.gi, c.ci, true),
              static_cast<int>(c.want.size()))
        << c.name;
    EXPECT_TRUE(UnhealthyIds(list).empty()) << c.name;
  }
}

TEST(DeviceListTest, SetHealthByIdChangesOneDevice) {
  DeviceList list(Replicas());
  EXPECT_FALSE(list.SetHealth("GPU-zz", false));
  EXPECT_TRUE(list.SetHealth("GPU-b", true));
  EXPECT_EQ(list.Snapshot()->version, 1u);
  EXPECT_TRUE(list.SetHealth("GPU-a::1", false));
  DeviceSnapshotPtr s = list.Snapshot();
  EXPECT_EQ(s->version, 2u);
  EXPECT_FALSE(s->Find("GPU-a::1")->healthy);
  EXPECT_TRUE(s->Find("GPU-a::0")->healthy);
}

TEST(DeviceListTest, WatchersAreCalledOnEveryRealChangeOnly) {
  DeviceList list(Replicas());
  int calls = 0;
  list.AddWatcher([&] { ++calls; });
  list.SetGpuHealth(1, true);  // no change
  list.Replace(Replicas());    // no change
  EXPECT_EQ(calls, 0);
  list.SetGpuHealth(0, false);
  list.SetHealth("GPU-a::0", true);
  list.Replace({});
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(list.Snapshot()->version, 4u);
}

TEST(DeviceListTest, WatcherSeesTheNewSnapshot) {
  DeviceList list(Replicas());
  uint64_t seen = 0;
  list.AddWatcher([&] { seen = list.Snapshot()->version; });
  list.SetGpuHealth(0, false);
  EXPECT_EQ(seen, 2u);
}

TEST(DeviceListTest, CloseAndNotifyCallWatchersWithoutAChange) {
  DeviceList list(Replicas());
  int calls = 0;
  list.AddWatcher([&] { ++calls; });
  list.NotifyWatchers();
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(list.closed());
  list.Close();
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(list.closed());
  EXPECT_EQ(list.Snapshot()->version, 1u);
}

TEST(DeviceListTest, RemovedWatcherIsNotCalledAgain) {
  DeviceList list(Replicas());
  int first = 0;
  int second = 0;
  const DeviceList::WatcherId id = list.AddWatcher([&] { ++first; });
  list.AddWatcher([&] { ++second; });
  list.SetGpuHealth(0, false);
  list.RemoveWatcher(id);
  list.SetGpuHealth(0, true);
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 2);
}

TEST(DeviceListTest, RemoveWatcherWaitsForARunningCall) {
  DeviceList list(Replicas());
  absl::Notification entered;
  absl::Notification release;
  std::atomic<bool> running{false};
  const DeviceList::WatcherId id = list.AddWatcher([&] {
    running = true;
    entered.Notify();
    release.WaitForNotification();
    running = false;
  });
  std::thread writer([&] { list.SetGpuHealth(0, false); });
  entered.WaitForNotification();
  std::thread remover([&] {
    list.RemoveWatcher(id);
    EXPECT_FALSE(running);
  });
  release.Notify();
  remover.join();
  writer.join();
}

}  // namespace
}  // namespace gpulet::plugin

namespace gpulet::plugin {
namespace {

TEST(DeviceSnapshotTest, FindUsesTheIndexAndFallsBackToScanning) {
  std::vector<Device> devices(3);
  for (int i = 0; i < 3; ++i) devices[i].id = "GPU-" + std::to_string(i);
  DeviceList list(devices);
  DeviceSnapshotPtr s = list.Snapshot();
  ASSERT_NE(s->index, nullptr);
  EXPECT_EQ(s->Find("GPU-2"), &s->devices[2]);
  EXPECT_EQ(s->Find("GPU-9"), nullptr);
  // A health flip keeps the IDs and shares the index.
  list.SetHealth("GPU-1", false);
  DeviceSnapshotPtr t = list.Snapshot();
  EXPECT_EQ(t->index, s->index);
  EXPECT_FALSE(t->Find("GPU-1")->healthy);
  // New IDs get a new index.
  devices.pop_back();
  list.Replace(devices);
  DeviceSnapshotPtr u = list.Snapshot();
  EXPECT_NE(u->index, s->index);
  EXPECT_EQ(u->Find("GPU-2"), nullptr);
  EXPECT_EQ(u->Find("GPU-1"), &u->devices[1]);
  // A snapshot built by hand scans.
  DeviceSnapshot manual;
  manual.devices = devices;
  EXPECT_EQ(manual.Find("GPU-0"), &manual.devices[0]);
}

}  // namespace
}  // namespace gpulet::plugin
