#include "src/cli/sim_command.h"

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "gtest/gtest.h"

namespace gpulet::cli {
namespace {

// Parses `args` (after "sim") and returns the control line, or "" on a
// parse error.
std::string Line(std::vector<std::string> args) {
  CLI::App app("test");
  SimOptions options;
  CLI::App* sim = AddSimCommand(app, options);
  args.insert(args.begin(), "sim");
  std::vector<const char*> argv = {"gpulet"};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return "";
  }
  ResolveSimVerb(*sim, options);
  return SimControlLine(options);
}

TEST(SimCommandTest, ControlLines) {
  EXPECT_EQ(Line({"xid", "--gpu", "0", "--xid", "79"}), "xid 0 79");
  EXPECT_EQ(
      Line({"xid", "--gpu", "MIG-1", "--xid", "31", "--gi", "2", "--ci", "0"}),
      "xid MIG-1 31 2 0");
  EXPECT_EQ(Line({"dbe", "--gpu", "GPU-abc"}), "dbe GPU-abc");
  EXPECT_EQ(Line({"sbe", "--gpu", "3"}), "sbe 3");
  EXPECT_EQ(Line({"lose", "--gpu", "1"}), "lose 1");
  EXPECT_EQ(Line({"restore", "--gpu", "1"}), "restore 1");
  EXPECT_EQ(Line({"wait-error", "--code", "15"}), "wait-error 15");
  EXPECT_EQ(Line({"wait-error", "--code", "15", "--count", "3"}),
            "wait-error 15 3");
  EXPECT_EQ(Line({"status"}), "status");
  EXPECT_EQ(Line({"--socket", "/tmp/s", "status"}), "status");
}

TEST(SimCommandTest, UsageErrors) {
  EXPECT_EQ(Line({}), "");                                   // no command
  EXPECT_EQ(Line({"xid", "--gpu", "0"}), "");                // no --xid
  EXPECT_EQ(Line({"xid", "--xid", "79"}), "");               // no --gpu
  EXPECT_EQ(Line({"xid", "--gpu", "0", "--xid", "x"}), "");  // not a number
  EXPECT_EQ(Line({"xid", "--gpu", "0", "--xid", "79", "--gi", "1"}), "");
  EXPECT_EQ(Line({"wait-error"}), "");
  EXPECT_EQ(Line({"wait-error", "--code", "0"}), "");  // NVML_SUCCESS
  EXPECT_EQ(Line({"bogus"}), "");
}

TEST(SimCommandTest, SocketIsRequired) {
  SimOptions options;
  absl::Status status = ValidateSimOptions(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("GPULET_SIM_SOCKET"),
            absl::string_view::npos);
  options.socket = "/tmp/x.sock";
  EXPECT_TRUE(ValidateSimOptions(options).ok());
}

TEST(SimCommandTest, RenderNeedsNoSocket) {
  CLI::App app("test");
  SimOptions options;
  CLI::App* sim = AddSimCommand(app, options);
  std::vector<const char*> argv = {"gpulet",    "sim",         "render",
                                   "/tmp/r",    "--dev-nodes", "files",
                                   "--machine", "pcie-t4"};
  app.parse(static_cast<int>(argv.size()), argv.data());
  ResolveSimVerb(*sim, options);
  EXPECT_EQ(options.verb, "render");
  EXPECT_EQ(options.root, "/tmp/r");
  EXPECT_EQ(options.machine, "pcie-t4");
  EXPECT_EQ(options.dev_nodes, "files");
  EXPECT_EQ(options.driver_dir, "driver");
  EXPECT_TRUE(ValidateSimOptions(options).ok());
  EXPECT_EQ(Line({"render", "/tmp/r", "--dev-nodes", "bogus"}), "");
  EXPECT_EQ(Line({"render"}), "");
}

}  // namespace
}  // namespace gpulet::cli
