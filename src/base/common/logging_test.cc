#include "src/base/common/logging.h"

#include <regex>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace gpulet::common {
namespace {

TEST(Logging, TextLineIsKlogFormat) {
  std::string line = FormatLogLine(LogFormat::kText, LogSeverity::kWarning,
                                   "/a/b/plugin.cc", 12, "hello");
  EXPECT_TRUE(std::regex_match(
      line,
      std::regex(
          R"(W\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ plugin\.cc:12\] hello\n)")))
      << line;
}

TEST(Logging, JsonLineParses) {
  std::string line = FormatLogLine(LogFormat::kJson, LogSeverity::kError,
                                   "x.cc", 3, "bad \"quote\"");
  nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["level"], "error");
  EXPECT_EQ(j["caller"], "x.cc:3");
  EXPECT_EQ(j["msg"], "bad \"quote\"");
}

TEST(Logging, VlogRespectsVerbosity) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  SetLogFd(fds[1]);
  SetVerbosity(1);
  GPULET_VLOG(2) << "hidden";
  GPULET_VLOG(1) << "shown";
  SetLogFd(2);
  SetVerbosity(0);
  ::close(fds[1]);
  char buf[512] = {};
  ssize_t n = ::read(fds[0], buf, sizeof(buf) - 1);
  ::close(fds[0]);
  std::string out(buf, n > 0 ? static_cast<size_t>(n) : 0);
  EXPECT_EQ(out.find("hidden"), std::string::npos);
  EXPECT_NE(out.find("shown"), std::string::npos);
}

}  // namespace
}  // namespace gpulet::common
