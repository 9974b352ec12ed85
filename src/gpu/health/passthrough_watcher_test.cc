// PassthroughWatcher on a tree rendered from the mixed-vfio profile: a read
// at start, one after a group node is deleted or created (inotify), one on
// Recheck; the periodic resync set far away so that only those count. On
// vfio-groups with the simulator's fake kernel: one when a function's
// driver changes without any group node changing (a uevent).
#include "src/gpu/health/passthrough_watcher.h"

#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "sim/fake_kernel.h"
#include "src/gpu/testing/test_tree.h"

namespace gpulet::health {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(30);

class Reads {
 public:
  void Add(const absl::StatusOr<vfio::Inventory>& inventory) {
    absl::MutexLock lock(&mu_);
    ++count_;
    gpus_ = inventory.ok() ? static_cast<int>(inventory->gpus.size()) : -1;
  }
  // Waits until more than `seen` reads happened; the new count.
  int WaitBeyond(int seen) {
    absl::MutexLock lock(&mu_);
    auto more = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return count_ > seen;
    };
    mu_.AwaitWithTimeout(absl::Condition(&more), kTimeout);
    return count_;
  }
  int gpus() {
    absl::MutexLock lock(&mu_);
    return gpus_;
  }

 private:
  absl::Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
  int gpus_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST(PassthroughWatcherTest, ReadsAtStartOnGroupNodeChangesAndOnRecheck) {
  vfio::testing::TestTree tree;
  tree.Render("mixed-vfio");
  Reads reads;
  absl::StatusOr<std::unique_ptr<PassthroughWatcher>> watcher =
      PassthroughWatcher::Start(
          tree.roots(), absl::Hours(1),
          [&](const absl::StatusOr<vfio::Inventory>& i) { reads.Add(i); });
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  int seen = reads.WaitBeyond(0);
  ASSERT_GE(seen, 1);
  EXPECT_EQ(reads.gpus(), 8);

  std::filesystem::remove(tree.root() + "/dev/vfio/50");
  seen = reads.WaitBeyond(seen);
  std::ofstream(tree.root() + "/dev/vfio/50").put('x');
  int after_create = reads.WaitBeyond(seen);
  EXPECT_GT(after_create, seen);

  (*watcher)->Recheck();
  EXPECT_GT(reads.WaitBeyond(after_create), after_create);
  watcher->reset();  // joins
}

TEST(PassthroughWatcherTest, ReadsWhenTheKernelAnnouncesABindingChange) {
  vfio::testing::TestTree tree;
  tree.Render("vfio-groups");
  const std::string socket = tree.root() + "/uevent.sock";
  Reads reads;
  absl::StatusOr<std::unique_ptr<PassthroughWatcher>> watcher =
      PassthroughWatcher::Start(
          tree.roots(), absl::Hours(1),
          [&](const absl::StatusOr<vfio::Inventory>& i) { reads.Add(i); },
          socket);
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  EXPECT_TRUE((*watcher)->has_uevents());
  sim::SysTree sys{tree.root() + "/sys", tree.root() + "/dev"};
  sys.uevent_socket = socket;
  absl::StatusOr<std::unique_ptr<sim::FakeKernel>> kernel =
      sim::FakeKernel::Start(sys);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const int seen = reads.WaitBeyond(0);
  // Group 20's node stays for its GPU on vfio-pci: no node comes or goes.
  tree.Write(tree.root() + "/sys/bus/pci/drivers/snd_hda_intel/unbind",
             "0000:17:00.1");
  EXPECT_GT(reads.WaitBeyond(seen), seen);
  EXPECT_TRUE(std::filesystem::exists(tree.root() + "/dev/vfio/20"));
  EXPECT_TRUE((*kernel)->Errors().empty());
  watcher->reset();
}

TEST(PassthroughWatcherTest, AnUnusableUeventSocketIsAnError) {
  vfio::testing::TestTree tree;
  tree.Render("mixed-vfio");
  absl::StatusOr<std::unique_ptr<PassthroughWatcher>> watcher =
      PassthroughWatcher::Start(
          tree.roots(), absl::Hours(1),
          [](const absl::StatusOr<vfio::Inventory>&) {},
          tree.root() + "/no/such/dir/uevent.sock");
  ASSERT_FALSE(watcher.ok());
  EXPECT_NE(watcher.status().message().find("uevent socket"),
            std::string::npos);
}

}  // namespace
}  // namespace gpulet::health
