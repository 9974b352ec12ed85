// PassthroughWatcher on a tree rendered from the mixed-vfio profile: a read
// at start, one after a group node is deleted or created (inotify), one on
// Recheck; the periodic resync set far away so that only those count.
#include "src/health/passthrough_watcher.h"

#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "src/vfio/test_tree.h"

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

}  // namespace
}  // namespace gpulet::health
