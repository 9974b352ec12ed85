#include "src/runtime/wrapper/oci_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"

namespace gpulet::runtime {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kMinimal[] =
    R"({"ociVersion":"1.0.2","root":{"path":"rootfs"},)"
    R"("process":{"env":["PATH=/bin","A=1"]},"x-future":{"k":[1,2]}})";

TEST(OciConfigTest, RoundTripKeepsUnknownFields) {
  absl::StatusOr<json> config = ParseOciConfig(kMinimal, "c.json");
  ASSERT_TRUE(config.ok()) << config.status();
  json reparsed = json::parse(SerializeOciConfig(*config));
  EXPECT_EQ(reparsed, json::parse(kMinimal));
  EXPECT_EQ(reparsed["x-future"]["k"][1], 2);
}

TEST(OciConfigTest, ErrorsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"{", "c.json: invalid JSON at byte "},
      {"[]", "the document must be a JSON object"},
      {R"({"process":{}})", "c.json: root: missing"},
      {R"({"root":"x","process":{}})", "root: not an object"},
      {R"({"root":{},"process":{}})", "root.path: missing or not a string"},
      {R"({"root":{"path":"r"}})", "c.json: process: missing"},
      {R"({"root":{"path":"r"},"process":[]})", "process: not an object"},
      {R"({"root":{"path":"r"},"process":{"env":"A=1"}})",
       "process.env: not a list"},
      {R"({"root":{"path":"r"},"process":{"env":["A=1",3]}})",
       "process.env[1]: not a string"},
  };
  for (const auto& [text, error] : cases) {
    absl::StatusOr<json> config = ParseOciConfig(text, "c.json");
    ASSERT_FALSE(config.ok()) << text;
    EXPECT_THAT(config.status().message(), HasSubstr(error)) << text;
  }
}

TEST(OciConfigTest, EnvGetAndSet) {
  json config = json::parse(kMinimal);
  EXPECT_EQ(GetProcessEnv(config, "A"), "1");
  EXPECT_EQ(GetProcessEnv(config, "B"), std::nullopt);
  SetProcessEnv(config, "A=2");
  SetProcessEnv(config, "B=3");
  EXPECT_EQ(config["process"]["env"],
            json::parse(R"(["PATH=/bin","A=2","B=3"])"));
  config["process"]["env"].push_back("A=9");
  EXPECT_EQ(GetProcessEnv(config, "A"), "9");
  SetProcessEnv(config, "A=4");
  EXPECT_EQ(config["process"]["env"],
            json::parse(R"(["PATH=/bin","A=4","B=3"])"));
  json no_env = json::parse(R"({"process":{}})");
  EXPECT_EQ(GetProcessEnv(no_env, "A"), std::nullopt);
  SetProcessEnv(no_env, "A=1");
  EXPECT_EQ(no_env["process"]["env"], json::parse(R"(["A=1"])"));
}

TEST(OciConfigTest, PrivilegedMeansSysAdminInBoundingSet) {
  EXPECT_FALSE(IsPrivileged(json::parse(R"({"process":{}})")));
  EXPECT_FALSE(IsPrivileged(
      json::parse(R"({"process":{"capabilities":{"bounding":["CAP_CHOWN"],)"
                  R"("effective":["CAP_SYS_ADMIN"]}}})")));
  EXPECT_TRUE(IsPrivileged(json::parse(
      R"({"process":{"capabilities":{"bounding":["CAP_SYS_ADMIN"]}}})")));
}

TEST(OciConfigTest, ReplaceFileKeepsMode) {
  char dir[] = "/tmp/rtociXXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/config.json";
  ASSERT_TRUE(ReplaceFile(path, "one").ok());
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  ASSERT_TRUE(ReplaceFile(path, "two").ok());
  EXPECT_EQ(*common::ReadFile(path), "two");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace gpulet::runtime
