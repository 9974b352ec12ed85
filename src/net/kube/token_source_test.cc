#include "src/net/kube/token_source.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"

namespace gpulet::kube {
namespace {

class TokenSourceTest : public ::testing::Test {
 protected:
  TokenSourceTest() {
    char tmpl[] = "/tmp/ktok.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    file_ = dir_ + "/token";
  }
  ~TokenSourceTest() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& text) {
    ASSERT_TRUE(common::WriteFileAtomic(file_, text, {.durable = false}).ok());
  }

  std::string dir_, file_;
  common::FakeClock clock_;
};

TEST_F(TokenSourceTest, StaticTokenAndNone) {
  TokenSource fixed("abc", "", clock_);
  EXPECT_EQ(*fixed.Token(), "abc");
  TokenSource none("", "", clock_);
  EXPECT_EQ(*none.Token(), "");
}

TEST_F(TokenSourceTest, RereadsTheFileAfterTheRefreshPeriod) {
  Write("first\n");
  TokenSource source("", file_, clock_, absl::Minutes(1));
  EXPECT_EQ(*source.Token(), "first");
  Write("second\n");
  clock_.Advance(absl::Seconds(59));
  EXPECT_EQ(*source.Token(), "first");
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(*source.Token(), "second");
}

TEST_F(TokenSourceTest, InvalidateRereadsAtOnce) {
  Write("first");
  TokenSource source("", file_, clock_);
  EXPECT_EQ(*source.Token(), "first");
  Write("second");
  source.Invalidate();
  EXPECT_EQ(*source.Token(), "second");
}

TEST_F(TokenSourceTest, KeepsTheLastTokenWhenTheFileGoesBad) {
  Write("first");
  TokenSource source("", file_, clock_);
  EXPECT_EQ(*source.Token(), "first");
  std::filesystem::remove(file_);
  clock_.Advance(absl::Minutes(2));
  EXPECT_EQ(*source.Token(), "first");
  Write("  \n");
  source.Invalidate();
  EXPECT_EQ(*source.Token(), "first");
}

TEST_F(TokenSourceTest, ErrorWhenNeverRead) {
  TokenSource source("", file_, clock_);
  absl::StatusOr<std::string> token = source.Token();
  EXPECT_EQ(token.status().code(), absl::StatusCode::kNotFound);
  Write("\n");
  token = source.Token();
  EXPECT_EQ(token.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(token.status().message(), ::testing::HasSubstr("is empty"));
}

}  // namespace
}  // namespace gpulet::kube
