#include "src/gpu/mps/supervisor.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/node_render.h"

namespace gpulet::mps {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(30);

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Polls a file-system condition (the fake daemon's log) until it holds.
bool Eventually(const std::function<bool()>& pred) {
  const absl::Time deadline = absl::Now() + kTimeout;
  while (!pred()) {
    if (absl::Now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool Gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mpsXXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    binary_ = dir_ + "/nvidia-cuda-mps-control";
    std::ofstream(binary_) << sim::MpsControlScript("550.54.15");
    ASSERT_EQ(::chmod(binary_.c_str(), 0755), 0);
    root_ = dir_ + "/mps";
  }
  void TearDown() override {
    supervisor_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void Start() {
    SupervisorOptions o;
    o.binary = binary_;
    o.mps_root = root_;
    o.initial_backoff = absl::Milliseconds(10);
    o.max_backoff = absl::Milliseconds(100);
    o.stop_grace = kTimeout;
    o.nvidia_smi = nvidia_smi_;
    o.registry = &registry_;
    o.on_change = [this](const std::string& uuid, bool up,
                         const std::string& reason) {
      absl::MutexLock lock(&mu_);
      events_.push_back(absl::StrCat(uuid, up ? " up" : " down"));
      reasons_.push_back(reason);
    };
    auto s = Supervisor::Create(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status();
    supervisor_ = *std::move(s);
  }

  // Waits until `uuid` has been reported up (or down) `times` times.
  bool WaitEvents(const std::string& event, int times) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() {
      mu_.AssertHeld();
      return std::count(events_.begin(), events_.end(), event) >= times;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), kTimeout);
  }

  std::string Log(const std::string& uuid) const {
    return ReadAll(absl::StrCat(root_, "/", uuid, "/log/control.log"));
  }
  // The pid of the last start recorded in the fake daemon's log.
  pid_t LastPid(const std::string& uuid) const {
    const std::string log = Log(uuid);
    const size_t at = log.rfind("start -f pid=");
    if (at == std::string::npos) return -1;
    const size_t begin = at + std::string("start -f pid=").size();
    int pid = -1;
    if (!absl::SimpleAtoi(log.substr(begin, log.find(' ', begin) - begin),
                          &pid)) {
      return -1;
    }
    return pid;
  }

  std::string dir_, binary_, root_, nvidia_smi_;
  metrics::Registry registry_;
  absl::Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> reasons_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Supervisor> supervisor_;
};

TEST_F(SupervisorTest, OneDaemonPerGpuWithItsEnvironmentQuitOnStop) {
  Start();
  supervisor_->SetGpus({"GPU-a", "GPU-b"});
  ASSERT_TRUE(WaitEvents("GPU-a up", 1));
  ASSERT_TRUE(WaitEvents("GPU-b up", 1));
  EXPECT_TRUE(supervisor_->Up("GPU-a"));
  EXPECT_FALSE(supervisor_->Up("GPU-c"));
  for (const std::string gpu : {"GPU-a", "GPU-b"}) {
    EXPECT_THAT(Log(gpu), HasSubstr(absl::StrCat(
                              " CUDA_VISIBLE_DEVICES=", gpu,
                              " CUDA_MPS_PIPE_DIRECTORY=", root_, "/", gpu,
                              "/pipe CUDA_MPS_LOG_DIRECTORY=", root_, "/", gpu,
                              "/log\n")));
  }
  EXPECT_THAT(registry_.Render(),
              HasSubstr("gpulet_mps_daemon_up{gpu=\"GPU-b\"} 1\n"));
  const pid_t a = LastPid("GPU-a");
  const pid_t b = LastPid("GPU-b");
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  // Each daemon's /dev/shm is its GPU's <root>/<uuid>/shm, mode 01777, and
  // no other daemon's (seen through each one's own mount namespace).
  struct stat st;
  ASSERT_EQ(::lstat((root_ + "/GPU-a/shm").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777);
  std::ofstream(root_ + "/GPU-a/shm/segment") << "a";
  EXPECT_TRUE(std::filesystem::exists(
      absl::StrCat("/proc/", a, "/root/dev/shm/segment")));
  EXPECT_FALSE(std::filesystem::exists(
      absl::StrCat("/proc/", b, "/root/dev/shm/segment")));
  supervisor_.reset();
  EXPECT_THAT(Log("GPU-a"), HasSubstr("command quit\n"));
  EXPECT_THAT(Log("GPU-b"), HasSubstr("command quit\n"));
  EXPECT_TRUE(Gone(a));
  EXPECT_TRUE(Gone(b));
}

TEST_F(SupervisorTest, DeadDaemonIsDownUntilItStartsAgain) {
  Start();
  supervisor_->SetGpus({"GPU-a"});
  ASSERT_TRUE(WaitEvents("GPU-a up", 1));
  const pid_t first = LastPid("GPU-a");
  ASSERT_GT(first, 0);
  // Restarts fail while this file exists, so the down state is observable.
  std::ofstream(root_ + "/GPU-a/log/refuse-start") << "";
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(WaitEvents("GPU-a down", 1));
  ASSERT_TRUE(Eventually(
      [&] { return absl::StrContains(Log("GPU-a"), "refused -f"); }));
  EXPECT_FALSE(supervisor_->Up("GPU-a"));
  {
    absl::MutexLock lock(&mu_);
    EXPECT_THAT(reasons_.back(),
                HasSubstr("the control daemon exited (killed by signal 9)"));
  }
  std::filesystem::remove(root_ + "/GPU-a/log/refuse-start");
  ASSERT_TRUE(WaitEvents("GPU-a up", 2));
  EXPECT_TRUE(supervisor_->Up("GPU-a"));
  EXPECT_NE(LastPid("GPU-a"), first);
  const std::string metrics = registry_.Render();
  EXPECT_THAT(metrics, HasSubstr("gpulet_mps_daemon_up{gpu=\"GPU-a\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("gpulet_mps_daemon_restarts_total{gpu="
                                 "\"GPU-a\"}"));
  EXPECT_THAT(metrics, ::testing::Not(HasSubstr(
                           "gpulet_mps_daemon_restarts_total{gpu=\"GPU-a\"} "
                           "0\n")));
}

TEST_F(SupervisorTest, GpuDroppedFromTheListIsToldToQuit) {
  Start();
  supervisor_->SetGpus({"GPU-a", "GPU-b"});
  ASSERT_TRUE(WaitEvents("GPU-a up", 1));
  ASSERT_TRUE(WaitEvents("GPU-b up", 1));
  const pid_t b = LastPid("GPU-b");
  supervisor_->SetGpus({"GPU-a"});
  ASSERT_TRUE(Eventually([&] { return !supervisor_->Up("GPU-b"); }));
  EXPECT_THAT(Log("GPU-b"), HasSubstr("command quit\n"));
  EXPECT_TRUE(Gone(b));
  EXPECT_TRUE(supervisor_->Up("GPU-a"));
  EXPECT_THAT(Log("GPU-a"), ::testing::Not(HasSubstr("command quit")));
  // Reported down, so a GPU listed again later is not taken for up.
  EXPECT_TRUE(WaitEvents("GPU-b down", 1));
  EXPECT_THAT(registry_.Render(),
              ::testing::Not(HasSubstr("gpulet_mps_daemon_up{gpu=\"GPU-b\"}")));
}

TEST_F(SupervisorTest, DaemonStoppedBeforeItIsReadyIsTerminated) {
  // A control program that never opens its control socket.
  std::ofstream(binary_)
      << "#!/bin/sh\n"
         "echo \"start $$\" >> \"$CUDA_MPS_LOG_DIRECTORY/x\"\n"
         "exec sleep 600\n";
  Start();
  supervisor_->SetGpus({"GPU-a"});
  pid_t pid = -1;
  ASSERT_TRUE(Eventually([&] {
    const std::string log = ReadAll(root_ + "/GPU-a/log/x");
    return log.size() > 6 &&
           absl::SimpleAtoi(absl::StripSuffix(log.substr(6), "\n"), &pid);
  }));
  supervisor_.reset();
  EXPECT_TRUE(Gone(pid));
  absl::MutexLock lock(&mu_);
  EXPECT_TRUE(events_.empty());
}

// A daemon that cannot start says why, rather than exiting 127 later; a
// symlink where its shm directory goes is refused, not followed.
TEST_F(SupervisorTest, StartFailuresNameTheirCause) {
  DaemonSpec missing{dir_ + "/no-such-binary", "GPU-a", root_ + "/a/pipe",
                     root_ + "/a/log", root_ + "/a/shm"};
  auto got = ControlProcess::Start(missing);
  EXPECT_THAT(got.status().message(), HasSubstr("execve"));

  std::filesystem::create_directories(root_ + "/b");
  std::filesystem::create_directory_symlink("/tmp", root_ + "/b/shm");
  DaemonSpec planted{binary_, "GPU-b", root_ + "/b/pipe", root_ + "/b/log",
                     root_ + "/b/shm"};
  got = ControlProcess::Start(planted);
  EXPECT_THAT(got.status().message(), HasSubstr("is not a directory"));
}

TEST(DaemonEnvironment, ReplacesTheCudaVariables) {
  DaemonSpec spec{"/bin/x", "GPU-a", "/m/GPU-a/pipe", "/m/GPU-a/log",
                  "/m/GPU-a/shm"};
  EXPECT_THAT(
      DaemonEnvironment({"PATH=/bin", "CUDA_VISIBLE_DEVICES=0",
                         "CUDA_MPS_PIPE_DIRECTORY=/tmp/x", "HOME=/root"},
                        spec),
      ElementsAre("PATH=/bin", "HOME=/root", "CUDA_VISIBLE_DEVICES=GPU-a",
                  "CUDA_MPS_PIPE_DIRECTORY=/m/GPU-a/pipe",
                  "CUDA_MPS_LOG_DIRECTORY=/m/GPU-a/log"));
}

// sharing.mps: the limits are sent once the daemon listens, before the
// GPU is up; the compute mode is EXCLUSIVE_PROCESS while the GPU has a
// daemon; new limits restart the daemon; dropping the GPU restores DEFAULT.
TEST_F(SupervisorTest, SettingsSentComputeModeSetRestartedOnChange) {
  nvidia_smi_ = dir_ + "/nvidia-smi";
  std::ofstream(nvidia_smi_) << sim::NvidiaSmiScript("550.54.15");
  ASSERT_EQ(::chmod(nvidia_smi_.c_str(), 0755), 0);
  const std::string smi_log = dir_ + "/nvidia-smi.log";
  Start();
  const DaemonSettings two{{"set_default_device_pinned_mem_limit 0 7680M",
                            "set_default_active_thread_percentage 50"},
                           true};
  supervisor_->SetDaemons({{"GPU-a", two}});
  ASSERT_TRUE(WaitEvents("GPU-a up", 1));
  EXPECT_EQ(ReadAll(smi_log), "-i GPU-a -c EXCLUSIVE_PROCESS\n");
  ASSERT_TRUE(Eventually([&] {
    return absl::StrContains(
        Log("GPU-a"),
        "command set_default_device_pinned_mem_limit 0 7680M\n"
        "command set_default_active_thread_percentage 50\n");
  })) << Log("GPU-a");
  const pid_t first = LastPid("GPU-a");

  const DaemonSettings four{{"set_default_device_pinned_mem_limit 0 3840M",
                             "set_default_active_thread_percentage 25"},
                            true};
  supervisor_->SetDaemons({{"GPU-a", four}});
  ASSERT_TRUE(WaitEvents("GPU-a down", 1));
  ASSERT_TRUE(WaitEvents("GPU-a up", 2));
  ASSERT_TRUE(Eventually([&] {
    return absl::StrContains(Log("GPU-a"), "command quit\n");
  })) << Log("GPU-a");
  ASSERT_TRUE(Eventually([&] {
    const std::string log = Log("GPU-a");
    const size_t quit = log.find("command quit\n");
    const size_t limit =
        log.find("command set_default_device_pinned_mem_limit 0 3840M\n");
    return limit != std::string::npos && limit > quit &&
           absl::StrContains(log.substr(limit),
                             "command set_default_active_thread_percentage "
                             "25\n");
  })) << Log("GPU-a");
  EXPECT_NE(LastPid("GPU-a"), first);
  EXPECT_TRUE(Gone(first));
  // Still exclusive: the mode is not flipped between the two daemons.
  EXPECT_EQ(ReadAll(smi_log), "-i GPU-a -c EXCLUSIVE_PROCESS\n");
  EXPECT_EQ(registry_.Render().find(
                "gpulet_mps_daemon_restarts_total{gpu=\"GPU-a\"} 1"),
            std::string::npos);

  supervisor_->SetDaemons({});
  ASSERT_TRUE(WaitEvents("GPU-a down", 2));
  EXPECT_EQ(ReadAll(smi_log),
            "-i GPU-a -c EXCLUSIVE_PROCESS\n-i GPU-a -c DEFAULT\n");
}

// A GPU whose compute mode cannot be set gets no daemon: the supervisor
// tries again, and starts the daemon once nvidia-smi succeeds.
TEST_F(SupervisorTest, NoDaemonUntilTheComputeModeIsSet) {
  nvidia_smi_ = dir_ + "/nvidia-smi";
  std::ofstream(nvidia_smi_) << sim::NvidiaSmiScript("550.54.15");
  ASSERT_EQ(::chmod(nvidia_smi_.c_str(), 0755), 0);
  const std::string refuse = dir_ + "/nvidia-smi.refuse";
  std::ofstream(refuse) << "";
  Start();
  supervisor_->SetDaemons({{"GPU-a", DaemonSettings{{}, true}}});
  ASSERT_TRUE(Eventually([&] {
    const std::string log = ReadAll(dir_ + "/nvidia-smi.log");
    return std::count(log.begin(), log.end(), '\n') >= 2;
  }));
  EXPECT_FALSE(std::filesystem::exists(root_ + "/GPU-a/log/control.log"));
  EXPECT_FALSE(supervisor_->Up("GPU-a"));
  std::filesystem::remove(refuse);
  ASSERT_TRUE(WaitEvents("GPU-a up", 1));
}

}  // namespace
}  // namespace gpulet::mps
