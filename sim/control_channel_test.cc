// ControlServer and SendControlCommand over a real unix socket, with a
// handler standing in for the simulator.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/control_client.h"
#include "sim/control_protocol.h"
#include "sim/control_server.h"

namespace gpulet::sim {
namespace {

using ::testing::HasSubstr;

class ControlChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/gsimctlXXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/ctl.sock";
  }
  void TearDown() override {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }

  static std::string Echo(const std::string& line) {
    if (line == "fail") return FormatErrorReply("no \"fail\" here");
    return FormatOkReply("got " + line);
  }

  bool Exists() const {
    struct stat st;
    return ::lstat(path_.c_str(), &st) == 0;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(ControlChannelTest, RoundTrip) {
  auto server = ControlServer::Start(path_, Echo);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(*SendControlCommand(path_, "status"), "got status");
  EXPECT_EQ(*SendControlCommand(path_, "xid 0 79"), "got xid 0 79");
}

TEST_F(ControlChannelTest, ServerErrorIsInvalidArgumentWithItsMessage) {
  auto server = ControlServer::Start(path_, Echo);
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::string> reply = SendControlCommand(path_, "fail");
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reply.status().message(), "no \"fail\" here");
}

TEST_F(ControlChannelTest, NothingListeningIsUnavailable) {
  absl::StatusOr<std::string> reply = SendControlCommand(path_, "status");
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(reply.status().message(), HasSubstr(path_));
}

TEST_F(ControlChannelTest, DestructorStopsAndRemovesTheSocket) {
  {
    auto server = ControlServer::Start(path_, Echo);
    ASSERT_TRUE(server.ok()) << server.status();
    EXPECT_TRUE(Exists());
  }
  EXPECT_FALSE(Exists());
  EXPECT_EQ(SendControlCommand(path_, "status").status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(ControlChannelTest, StaleSocketIsReplaced) {
  // A socket file nobody accepts on, as a crashed simulator leaves behind.
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strcpy(address.sun_path, path_.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
            0);
  ::close(fd);
  ASSERT_TRUE(Exists());
  auto server = ControlServer::Start(path_, Echo);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(*SendControlCommand(path_, "status"), "got status");
}

TEST_F(ControlChannelTest, LiveOwnerIsRespected) {
  auto first = ControlServer::Start(path_, Echo);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = ControlServer::Start(path_, Echo);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("already serving"));
  EXPECT_EQ(*SendControlCommand(path_, "status"), "got status");
}

TEST_F(ControlChannelTest, RegularFileIsNotReplaced) {
  std::ofstream(path_) << "not a socket";
  auto server = ControlServer::Start(path_, Echo);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(server.status().message(), HasSubstr("not a socket"));
}

TEST_F(ControlChannelTest, PathTooLong) {
  std::string long_path = "/tmp/" + std::string(200, 'x');
  EXPECT_EQ(ControlServer::Start(long_path, Echo).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SendControlCommand(long_path, "status").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ControlChannelTest, MultiLineRequestIsRefusedByTheClient) {
  EXPECT_EQ(SendControlCommand(path_, "a\nb").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ControlChannelTest, OversizedRequestGetsAnError) {
  auto server = ControlServer::Start(path_, Echo);
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::string> reply =
      SendControlCommand(path_, std::string(3 * kMaxControlLineBytes, 'x'));
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reply.status().message(), HasSubstr("too long"));
}

}  // namespace
}  // namespace gpulet::sim
