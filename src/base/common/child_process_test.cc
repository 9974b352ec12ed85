#include "src/base/common/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/base/common/clock.h"
#include "src/base/common/file_util.h"

namespace gpulet::common {
namespace {

class ChildProcessTest : public ::testing::Test {
 protected:
  ChildProcessTest() {
    char tmpl[] = "/tmp/child.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~ChildProcessTest() override { std::filesystem::remove_all(dir_); }

  std::string Script(const std::string& body) {
    const std::string path = dir_ + "/s.sh";
    EXPECT_TRUE(WriteFileAtomic(path, "#!/bin/sh\n" + body + "\n",
                                {.mode = 0755, .durable = false})
                    .ok());
    return path;
  }

  pid_t WrittenPid() {
    int pid = -1;
    absl::StatusOr<std::string> text = ReadFile(dir_ + "/pid");
    if (!text.ok() ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &pid)) {
      return -1;
    }
    return pid;
  }

  static absl::Time In(absl::Duration d) { return RealClock::Get().Now() + d; }

  std::string dir_;
};

// Neither running nor a zombie waiting to be reaped.
bool Gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

TEST_F(ChildProcessTest, RunsWithExactlyTheGivenEnvironmentAndArgs) {
  ChildSpec spec{.argv = {"/usr/bin/env"}, .env = {"A=1", "B=two words"}};
  absl::StatusOr<ChildResult> r = RunChild(spec, 4096, In(absl::Minutes(1)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->output, "A=1\nB=two words\n");
  EXPECT_TRUE(ExitedCleanly(r->wait_status));
  EXPECT_TRUE(Gone(r->pid));

  spec = {.argv = {Script("echo \"$1|$2\"; exit 3"), "x y", "z"}};
  r = RunChild(spec, 4096, In(absl::Minutes(1)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->output, "x y|z\n");
  EXPECT_EQ(DescribeWaitStatus(r->wait_status), "exit status 3");
}

TEST_F(ChildProcessTest, StandardInputIsDevNullUnlessGiven) {
  ChildSpec spec{.argv = {"/bin/cat"}};
  absl::StatusOr<ChildResult> r = RunChild(spec, 4096, In(absl::Minutes(1)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->output, "");

  const std::string input = dir_ + "/in";
  ASSERT_TRUE(WriteFileAtomic(input, "hello", {.durable = false}).ok());
  const int fd = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
  spec.stdin_fd = fd;
  r = RunChild(spec, 4096, In(absl::Minutes(1)));
  ::close(fd);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->output, "hello");
}

TEST_F(ChildProcessTest, AMissingProgramIsNotFound) {
  absl::StatusOr<ChildResult> r =
      RunChild({.argv = {dir_ + "/missing"}}, 4096, In(absl::Minutes(1)));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  EXPECT_NE(r.status().message().find(dir_ + "/missing"), std::string::npos);
}

TEST_F(ChildProcessTest, PastTheDeadlineTheChildIsKilledAndReaped) {
  const std::string script =
      Script(absl::StrCat("echo $$ > ", dir_, "/pid.tmp; mv ", dir_,
                          "/pid.tmp ", dir_, "/pid; exec sleep 600"));
  absl::StatusOr<ChildResult> r =
      RunChild({.argv = {script}, .own_process_group = true}, 4096,
               In(absl::Seconds(2)));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded)
      << r.status();
  const pid_t pid = WrittenPid();
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(Gone(pid));
}

TEST_F(ChildProcessTest, TooMuchOutputKillsAndReaps) {
  const std::string script =
      Script(absl::StrCat("echo $$ > ", dir_, "/pid.tmp; mv ", dir_,
                          "/pid.tmp ", dir_, "/pid; exec yes"));
  absl::StatusOr<ChildResult> r =
      RunChild({.argv = {script}}, 1 << 16, In(absl::Minutes(1)));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted)
      << r.status();
  const pid_t pid = WrittenPid();
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(Gone(pid));
}

}  // namespace
}  // namespace gpulet::common
