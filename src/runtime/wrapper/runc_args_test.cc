#include "src/runtime/wrapper/runc_args.h"

#include "gtest/gtest.h"

namespace gpulet::runtime {
namespace {

struct Case {
  std::vector<std::string> args;
  std::string subcommand;
  std::string bundle;
  std::string id;
};

TEST(RuncArgsTest, Table) {
  const Case cases[] = {
      {{"create", "--bundle", "/b", "c1"}, "create", "/b", "c1"},
      {{"create", "-b", "/b", "c1"}, "create", "/b", "c1"},
      {{"create", "--bundle=/b", "c1"}, "create", "/b", "c1"},
      {{"create", "-bundle", "/b", "c1"}, "create", "/b", "c1"},
      {{"create", "c1"}, "create", "", "c1"},
      {{"--root", "/run/x", "--log", "/l", "--log-format=json", "--debug",
        "--systemd-cgroup", "create", "--pid-file", "/p", "--console-socket",
        "/s", "--no-pivot", "-b", "/b", "c1"},
       "create",
       "/b",
       "c1"},
      {{"--root=/r", "run", "-d", "--bundle", "/b", "c2"}, "run", "/b", "c2"},
      {{"--root", "/r", "start", "c1"}, "start", "", ""},
      {{"delete", "--force", "-b", "/x", "c1"}, "delete", "", ""},
      {{"--version"}, "", "", ""},
      {{}, "", "", ""},
      {{"create", "--bundle"}, "create", "", ""},
  };
  for (const Case& c : cases) {
    RuncInvocation inv = ParseRuncArgs(c.args);
    EXPECT_EQ(inv.subcommand, c.subcommand) << testing::PrintToString(c.args);
    EXPECT_EQ(inv.bundle, c.bundle) << testing::PrintToString(c.args);
    EXPECT_EQ(inv.container_id, c.id) << testing::PrintToString(c.args);
  }
}

TEST(RuncArgsTest, OnlyCreateAndRunCreate) {
  EXPECT_TRUE(CreatesContainer({"create", "", ""}));
  EXPECT_TRUE(CreatesContainer({"run", "", ""}));
  EXPECT_FALSE(CreatesContainer({"start", "", ""}));
  EXPECT_FALSE(CreatesContainer({"exec", "", ""}));
  EXPECT_FALSE(CreatesContainer({"", "", ""}));
}

}  // namespace
}  // namespace gpulet::runtime
