#include "src/dra/runner/dra_sharing.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/node_render.h"

namespace gpulet::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Lines(const std::string& path) {
  return absl::StrSplit(ReadAll(path), '\n', absl::SkipEmpty());
}

// Polls a file-system condition (the fake tools' logs) until it holds.
bool Eventually(const std::function<bool()>& pred) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool Gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

dra::ClaimSharing TimeSlicing(const std::string& interval) {
  return {.strategy = "TimeSlicing",
          .interval = interval,
          .active_thread_percentage = std::nullopt};
}

class DraSharingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/drashXXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options_.nvidia_smi =
        Script("nvidia-smi", sim::NvidiaSmiScript("550.54.15"));
    options_.mps_control =
        Script("nvidia-cuda-mps-control", sim::MpsControlScript("550.54.15"));
    options_.mps_root = dir_ + "/mps";
    options_.stop_grace = absl::Seconds(30);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Script(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    EXPECT_EQ(::chmod(path.c_str(), 0755), 0);
    return path;
  }
  std::vector<std::string> SmiCalls() {
    return Lines(dir_ + "/nvidia-smi.log");
  }

  std::string dir_;
  DraSharingOptions options_;
};

TEST_F(DraSharingTest, TimeSliceIsSetPerGpuAndResetWhenTheLastClaimGoes) {
  DraSharing sharing(options_);
  absl::StatusOr<dra::SharingEdits> a =
      sharing.Apply("uid-a", TimeSlicing("Long"), {"GPU-1", "MIG-9"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, dra::SharingEdits{});
  ASSERT_TRUE(sharing.Apply("uid-b", TimeSlicing(""), {"GPU-1"}).ok());
  EXPECT_THAT(SmiCalls(),
              ElementsAre("compute-policy -i GPU-1 --set-timeslice=3",
                          "compute-policy -i GPU-1 --set-timeslice=0"));
  EXPECT_TRUE(sharing.Release("uid-a").ok());
  EXPECT_EQ(SmiCalls().size(), 2u);  // uid-b still holds GPU-1
  EXPECT_TRUE(sharing.Release("uid-b").ok());
  EXPECT_TRUE(sharing.Release("uid-b").ok());
  EXPECT_THAT(SmiCalls(),
              ElementsAre(::testing::_, ::testing::_,
                          "compute-policy -i GPU-1 --set-timeslice=0"));
}

TEST_F(DraSharingTest, AFailingToolFailsTheClaimNamingTheGpu) {
  std::ofstream(dir_ + "/nvidia-smi.refuse") << "";
  DraSharing sharing(options_);
  absl::StatusOr<dra::SharingEdits> got =
      sharing.Apply("uid-a", TimeSlicing("Short"), {"GPU-1"});
  EXPECT_THAT(got.status().message(), HasSubstr("set the time-slice of GPU-1"));
  EXPECT_THAT(got.status().message(), HasSubstr("exit status 1"));

  DraSharingOptions no_root = options_;
  no_root.mps_root.clear();
  DraSharing without(no_root);
  EXPECT_THAT(
      without.Apply("uid-a", {.strategy = "MPS"}, {"GPU-1"}).status().message(),
      HasSubstr("--mps-root"));
}

TEST_F(DraSharingTest, MpsClaimGetsItsOwnDaemonStoppedOnRelease) {
  DraSharing sharing(options_);
  absl::StatusOr<dra::SharingEdits> edits =
      sharing.Apply("uid-m", {.strategy = "MPS"}, {"GPU-1", "GPU-2"});
  ASSERT_TRUE(edits.ok()) << edits.status();
  const std::string host = options_.mps_root + "/claim-uid-m";
  EXPECT_THAT(edits->env,
              ElementsAre("CUDA_MPS_PIPE_DIRECTORY=/mps/claim-uid-m/pipe"));
  ASSERT_EQ(edits->mounts.size(), 2u);
  EXPECT_EQ(edits->mounts[0].host_path, host + "/pipe");
  EXPECT_EQ(edits->mounts[0].container_path, "/mps/claim-uid-m/pipe");
  EXPECT_EQ(edits->mounts[1].host_path, host + "/shm");
  EXPECT_EQ(edits->mounts[1].container_path, "/dev/shm");
  EXPECT_TRUE(std::filesystem::is_directory(host + "/shm"));

  const std::string log = host + "/log/control.log";
  ASSERT_TRUE(Eventually(
      [&] { return std::filesystem::exists(host + "/pipe/control"); }));
  EXPECT_THAT(ReadAll(log), HasSubstr("start -f pid="));
  EXPECT_THAT(ReadAll(log), HasSubstr("CUDA_VISIBLE_DEVICES=GPU-1,GPU-2 "
                                      "CUDA_MPS_PIPE_DIRECTORY=" +
                                      host + "/pipe"));
  const int pid = sharing.DaemonPid("uid-m");
  ASSERT_GT(pid, 0);
  // Applying again (a second prepare, a restart) keeps the one daemon.
  ASSERT_TRUE(
      sharing.Apply("uid-m", {.strategy = "MPS"}, {"GPU-1", "GPU-2"}).ok());
  EXPECT_EQ(sharing.DaemonPid("uid-m"), pid);

  // OK only if the daemon quit when told to (the fake quits on `quit`).
  EXPECT_TRUE(sharing.Release("uid-m").ok());
  EXPECT_EQ(sharing.DaemonPid("uid-m"), -1);
  EXPECT_TRUE(Gone(pid));
  EXPECT_FALSE(std::filesystem::exists(host));  // log included
  EXPECT_TRUE(SmiCalls().empty());
}

// Issue: one /dev/shm for every MPS client on the node. Two claims' CDI
// edits name different /dev/shm directories, each claim's daemon has its
// own as /dev/shm, and unprepare removes them.
TEST_F(DraSharingTest, TwoMpsClaimsNeverShareShm) {
  DraSharing sharing(options_);
  auto a = sharing.Apply("uid-a", {.strategy = "MPS"}, {"GPU-1"});
  auto b = sharing.Apply("uid-b", {.strategy = "MPS"}, {"GPU-1"});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  auto shm = [](const dra::SharingEdits& e) {
    for (const cdi::Mount& m : e.mounts) {
      if (m.container_path == "/dev/shm") return m.host_path;
    }
    return std::string();
  };
  const std::string shm_a = options_.mps_root + "/claim-uid-a/shm";
  const std::string shm_b = options_.mps_root + "/claim-uid-b/shm";
  EXPECT_EQ(shm(*a), shm_a);
  EXPECT_EQ(shm(*b), shm_b);
  struct stat st;
  ASSERT_EQ(::lstat(shm_a.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777);
  EXPECT_EQ(st.st_uid, 0u);

  // Both daemons listening, so that Release stops them with `quit`: a
  // daemon stopped before it listens is signalled, and the fake one's
  // children may still be creating its pipe while the directory goes.
  for (const char* claim : {"claim-uid-a", "claim-uid-b"}) {
    const std::string control =
        absl::StrCat(options_.mps_root, "/", claim, "/pipe/control");
    ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(control); }))
        << control;
  }

  // What each daemon sees as /dev/shm (through its own mount namespace).
  const int pid_a = sharing.DaemonPid("uid-a");
  const int pid_b = sharing.DaemonPid("uid-b");
  ASSERT_GT(pid_a, 0);
  ASSERT_GT(pid_b, 0);
  std::ofstream(shm_a + "/segment-a") << "a";
  const auto seen = [](int pid, const std::string& name) {
    return std::filesystem::exists("/proc/" + std::to_string(pid) +
                                   "/root/dev/shm/" + name);
  };
  EXPECT_TRUE(seen(pid_a, "segment-a"));
  EXPECT_FALSE(seen(pid_b, "segment-a"));
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/segment-a"));

  ASSERT_TRUE(sharing.Release("uid-a").ok());
  EXPECT_FALSE(std::filesystem::exists(options_.mps_root + "/claim-uid-a"));
  EXPECT_TRUE(std::filesystem::is_directory(shm_b));
  absl::Status released = sharing.Release("uid-b");
  ASSERT_TRUE(released.ok()) << released;
  EXPECT_FALSE(std::filesystem::exists(options_.mps_root + "/claim-uid-b"));
}

// Issue: NVIDIA's MPS example claim (50% of the threads, 10Gi pinned)
// ran with no limit. The claim's daemon is told its defaults, per device
// in the claim's order, before any client can reach it.
TEST_F(DraSharingTest, MpsLimitsAreTheClaimDaemonsDefaults) {
  DraSharing sharing(options_);
  dra::ClaimSharing mps{
      .strategy = "MPS",
      .interval = "",
      .active_thread_percentage = 50,
      .pinned_memory_limit = int64_t{10} << 30,
      .per_device_pinned_memory_limit = {{"1", int64_t{5} << 30}}};
  ASSERT_TRUE(sharing.Apply("uid-l", mps, {"GPU-1", "GPU-2"}).ok());
  // Apply waited for the control socket: the daemon is listening.
  const std::string host = options_.mps_root + "/claim-uid-l";
  EXPECT_TRUE(std::filesystem::exists(host + "/pipe/control"));
  const std::string log = host + "/log/control.log";
  const std::vector<std::string> want = {
      "command set_default_active_thread_percentage 50",
      "command set_default_device_pinned_mem_limit GPU-1 10240M",
      "command set_default_device_pinned_mem_limit GPU-2 5120M"};
  ASSERT_TRUE(Eventually([&] { return Lines(log).size() >= 4; }))
      << ReadAll(log);
  const std::vector<std::string> lines = Lines(log);
  EXPECT_THAT(lines[0], HasSubstr("start -f pid="));
  EXPECT_EQ(std::vector<std::string>(lines.begin() + 1, lines.end()), want);
  EXPECT_TRUE(sharing.Release("uid-l").ok());

  // An entry for a device the claim does not have fails before any daemon.
  mps.per_device_pinned_memory_limit = {{"2", int64_t{1} << 30}};
  absl::StatusOr<dra::SharingEdits> got =
      sharing.Apply("uid-x", mps, {"GPU-1", "GPU-2"});
  EXPECT_THAT(got.status().message(),
              HasSubstr("defaultPerDevicePinnedMemoryLimit[\"2\"]"));
  EXPECT_EQ(sharing.DaemonPid("uid-x"), -1);
}

TEST_F(DraSharingTest, ADaemonThatCannotTakeTheLimitsFailsTheClaim) {
  const std::string log = options_.mps_root + "/claim-uid-r/log";
  std::filesystem::create_directories(log);
  std::ofstream(log + "/refuse-start") << "";
  DraSharing sharing(options_);
  absl::StatusOr<dra::SharingEdits> got = sharing.Apply(
      "uid-r",
      {.strategy = "MPS", .interval = "", .active_thread_percentage = 10},
      {"GPU-1"});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(got.status().message(), HasSubstr("exit status 1"));
  EXPECT_EQ(sharing.DaemonPid("uid-r"), -1);
}

TEST_F(DraSharingTest, AClaimUidThatIsNoPathComponentIsRefused) {
  DraSharing sharing(options_);
  for (const char* uid : {"../x", "a/b", ""}) {
    auto got = sharing.Apply(uid, {.strategy = "MPS"}, {"GPU-1"});
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << uid;
  }
  EXPECT_FALSE(std::filesystem::exists(options_.mps_root));
}

TEST_F(DraSharingTest, ADaemonThatEndedIsStartedAgainOnApply) {
  DraSharing sharing(options_);
  ASSERT_TRUE(sharing.Apply("uid-m", {.strategy = "MPS"}, {"GPU-1"}).ok());
  const int pid = sharing.DaemonPid("uid-m");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  // Reaped by the next Apply, which starts a new daemon.
  ASSERT_TRUE(Eventually([&] {
    EXPECT_TRUE(sharing.Apply("uid-m", {.strategy = "MPS"}, {"GPU-1"}).ok());
    return sharing.DaemonPid("uid-m") != pid;
  }));
  EXPECT_GT(sharing.DaemonPid("uid-m"), 0);
}

}  // namespace
}  // namespace gpulet::daemon
