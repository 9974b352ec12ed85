#include "src/net/registration/socket_watcher.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::registration {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kOwn[] = "gpulet-gpu.sock";
constexpr char kOther[] = "gpulet-mig-1g.5gb.sock";

// Collects callbacks; tests wait for a condition with a generous deadline
// (the wait ends as soon as the event arrives).
class Recorder {
 public:
  void Add(const SocketEvent& event) {
    absl::MutexLock lock(&mu_);
    if (event.kubelet_socket_created) ++created_;
    for (const auto& name : event.deleted) deleted_.push_back(name);
    ++calls_;
  }
  bool WaitCreated(int n) {
    absl::MutexLock lock(&mu_);
    auto done = [&] {
      mu_.AssertHeld();
      return created_ >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(10));
  }
  bool WaitDeleted(size_t n) {
    absl::MutexLock lock(&mu_);
    auto done = [&] {
      mu_.AssertHeld();
      return deleted_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(10));
  }
  std::vector<std::string> deleted() {
    absl::MutexLock lock(&mu_);
    return deleted_;
  }
  int created() {
    absl::MutexLock lock(&mu_);
    return created_;
  }

 private:
  absl::Mutex mu_;
  int created_ ABSL_GUARDED_BY(mu_) = 0;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> deleted_ ABSL_GUARDED_BY(mu_);
};

class SocketWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpulet-sw-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/plugins";
    std::filesystem::create_directory(dir_);
  }
  void TearDown() override {
    watcher_.reset();
    std::filesystem::remove_all(root_);
  }
  void Watch() {
    auto watcher = SocketWatcher::Create(
        dir_, "kubelet.sock", {kOwn, kOther},
        [this](const SocketEvent& e) { recorder_.Add(e); });
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    watcher_ = *std::move(watcher);
  }
  void Touch(const std::string& name) {
    std::ofstream(dir_ + "/" + name) << "";
  }
  // A bound unix socket, as the kubelet and the plugin create.
  void Bind(const std::string& name) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::string path = dir_ + "/" + name;
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    close(fd);
  }
  void Remove(const std::string& name) {
    ASSERT_TRUE(std::filesystem::remove(dir_ + "/" + name)) << name;
  }

  std::string root_;
  std::string dir_;
  Recorder recorder_;
  std::unique_ptr<SocketWatcher> watcher_;
};

TEST_F(SocketWatcherTest, ReportsKubeletSocketCreated) {
  Watch();
  Bind("kubelet.sock");
  ASSERT_TRUE(recorder_.WaitCreated(1));
  EXPECT_THAT(recorder_.deleted(), IsEmpty());
}

TEST_F(SocketWatcherTest, ReportsKubeletSocketRenamedIntoPlace) {
  Watch();
  Touch("tmp");
  std::filesystem::rename(dir_ + "/tmp", dir_ + "/kubelet.sock");
  EXPECT_TRUE(recorder_.WaitCreated(1));
}

TEST_F(SocketWatcherTest, ReportsOwnSocketDeleted) {
  Bind(kOwn);
  Watch();
  Remove(kOwn);
  ASSERT_TRUE(recorder_.WaitDeleted(1));
  EXPECT_THAT(recorder_.deleted(), ElementsAre(kOwn));
  EXPECT_EQ(recorder_.created(), 0);
}

TEST_F(SocketWatcherTest, IgnoresOtherFiles) {
  Touch("nvidia-gpu.sock");
  Touch("kubelet_internal_checkpoint");
  Watch();
  Remove("nvidia-gpu.sock");
  Touch("kubelet_internal_checkpoint.tmp");
  Remove("kubelet_internal_checkpoint");
  // A relevant event after the irrelevant ones: once it arrives, the
  // earlier ones have been processed too (one inotify queue, in order).
  Touch(kOther);
  Remove(kOther);
  ASSERT_TRUE(recorder_.WaitDeleted(1));
  EXPECT_THAT(recorder_.deleted(), ElementsAre(kOther));
  EXPECT_EQ(recorder_.created(), 0);
}

TEST_F(SocketWatcherTest, KubeletRestartDeletesSocketsAndRecreates) {
  Bind("kubelet.sock");
  Bind(kOwn);
  Bind(kOther);
  Watch();
  for (const char* name : {"kubelet.sock", kOwn, kOther}) Remove(name);
  Bind("kubelet.sock");
  ASSERT_TRUE(recorder_.WaitCreated(1));
  ASSERT_TRUE(recorder_.WaitDeleted(2));
  EXPECT_THAT(recorder_.deleted(), ElementsAre(kOwn, kOther));
}

TEST_F(SocketWatcherTest, SurvivesDirectoryRemovedAndRecreated) {
  Bind(kOwn);
  Watch();
  std::filesystem::remove_all(dir_);
  ASSERT_TRUE(recorder_.WaitDeleted(2));
  // The socket's own deletion may arrive in an earlier batch than the
  // directory's; then it is reported twice, which the daemon tolerates.
  std::vector<std::string> deleted = recorder_.deleted();
  EXPECT_THAT(std::set<std::string>(deleted.begin(), deleted.end()),
              ElementsAre(kOwn, kOther));
  std::filesystem::create_directory(dir_);
  Bind("kubelet.sock");
  ASSERT_TRUE(recorder_.WaitCreated(1));
  // And the new directory is watched.
  Bind(kOwn);
  Remove(kOwn);
  ASSERT_TRUE(recorder_.WaitDeleted(3));
}

TEST_F(SocketWatcherTest, ManyRestartsKeepReporting) {
  Watch();
  for (int i = 1; i <= 50; ++i) {
    Bind("kubelet.sock");
    ASSERT_TRUE(recorder_.WaitCreated(i));
    Remove("kubelet.sock");
  }
}

// When events are dropped (the inotify queue overflowed while the callback
// was busy), a kubelet restart inside the lost events must not go unnoticed:
// the watcher reports everything as possibly changed.
TEST_F(SocketWatcherTest, QueueOverflowReportsEverythingToReCheck) {
  absl::Notification entered;
  absl::Notification release;
  std::atomic<int> calls{0};
  auto watcher = SocketWatcher::Create(dir_, "kubelet.sock", {kOwn, kOther},
                                       [&](const SocketEvent& e) {
                                         if (calls++ == 0) {
                                           entered.Notify();
                                           release.WaitForNotification();
                                         }
                                         recorder_.Add(e);
                                       });
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  watcher_ = *std::move(watcher);
  Bind("kubelet.sock");
  // The watcher's thread waits in the callback: nothing reads the queue.
  ASSERT_TRUE(entered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  int max_queued = 16384;
  std::ifstream("/proc/sys/fs/inotify/max_queued_events") >> max_queued;
  for (int i = 0; i < max_queued + 64; ++i) Touch("f" + std::to_string(i));
  release.Notify();
  ASSERT_TRUE(recorder_.WaitCreated(2)) << "overflow not reported";
  ASSERT_TRUE(recorder_.WaitDeleted(2));
  std::vector<std::string> deleted = recorder_.deleted();
  EXPECT_NE(std::find(deleted.begin(), deleted.end(), kOwn), deleted.end());
  EXPECT_NE(std::find(deleted.begin(), deleted.end(), kOther), deleted.end());
}

TEST(SocketWatcherCreateTest, MissingDirectoryIsAnError) {
  auto watcher =
      SocketWatcher::Create("/nonexistent/gpulet-plugins", "kubelet.sock",
                            {kOwn}, [](const SocketEvent&) {});
  ASSERT_FALSE(watcher.ok());
  EXPECT_THAT(std::string(watcher.status().message()),
              ::testing::HasSubstr("/nonexistent/gpulet-plugins"));
}

}  // namespace
}  // namespace gpulet::registration
