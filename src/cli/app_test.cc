#include "src/cli/app.h"

#include <stdlib.h>

#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunArgs(std::vector<const char*> args) {
  args.insert(args.begin(), "gpulet");
  std::ostringstream out;
  std::ostringstream err;
  int code = Run(static_cast<int>(args.size()), args.data(), out, err);
  return {code, out.str(), err.str()};
}

class AppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GPULET_SIM_SOCKET");
    unsetenv("GPULET_NVML_LIB");
    unsetenv("NVIDIA_DRIVER_ROOT");
  }
};

TEST_F(AppTest, Version) {
  Result r = RunArgs({"version"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, StartsWith("gpulet "));
  EXPECT_EQ(r.err, "");
}

TEST_F(AppTest, VersionFlagPrintsTheVersionAndSucceeds) {
  Result r = RunArgs({"--version"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, RunArgs({"version"}).out);
  EXPECT_EQ(r.err, "");
}

TEST_F(AppTest, AMistypedCommandIsNamedWithTheNearestOne) {
  Result r = RunArgs({"devics"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, StartsWith("gpulet: unknown command \"devics\" for "
                                "'gpulet'; did you mean 'devices'?"));
  r = RunArgs({"--log-format", "json", "lables", "--oneshot"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("\"lables\""));
  EXPECT_THAT(r.err, HasSubstr("did you mean 'labels'?"));
  r = RunArgs({"sim", "--socket", "/tmp/x.sock", "xdi"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("unknown command \"xdi\" for 'gpulet sim'; "
                               "did you mean 'xid'?"));
}

TEST_F(AppTest, AFarOffCommandListsTheCommands) {
  Result r = RunArgs({"daemon"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("unknown command \"daemon\" for 'gpulet' "
                               "(commands: devices, topo, "));
  EXPECT_EQ(r.out, "");
  r = RunArgs({"runtime"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("'gpulet runtime' needs a command (configure)"));
  // A bad value is reported as such, command or not.
  r = RunArgs({"sim", "--timeout-ms", "0"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--timeout-ms: '0'"));
}

// Global options after the subcommand, as docs/plugin.md and cli.md say.
TEST_F(AppTest, GlobalOptionsMayFollowTheSubcommand) {
  Result r = RunArgs({"devices", "--nvml-lib", "/nonexistent/lib.so.1"});
  EXPECT_EQ(r.code, kExitRuntimeError) << r.err;
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/lib.so.1"));
  r = RunArgs({"cdi", "generate", "--nvml-lib", "/nonexistent/lib.so.1"});
  EXPECT_EQ(r.code, kExitRuntimeError) << r.err;
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/lib.so.1"));
  EXPECT_EQ(RunArgs({"version", "-v", "2", "--log-format", "json"}).code,
            kExitOk);
}

// Ranges read as a user writes them, not as the C++ type's limits.
TEST_F(AppTest, RangeErrorsStateTheRange) {
  Result r = RunArgs({"sim", "--timeout-ms", "0", "status"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--timeout-ms: '0' is not a whole number of 1 "
                               "or more"));
  EXPECT_LT(r.err.size(), 120u) << r.err;
  r = RunArgs({"extender", "--request-timeout", "0"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--request-timeout: '0' is not a whole number "
                               "from 1 to 3600"));
  r = RunArgs({"dra", "--node-name", "n", "--kube-api-qps", "0.5"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(
      r.err,
      HasSubstr("--kube-api-qps: '0.5' is not a number from 1 to 10000"));
}

TEST_F(AppTest, HelpSucceeds) {
  Result r = RunArgs({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("devices"));
  EXPECT_THAT(r.out, HasSubstr("--driver-root"));
}

// Only the subcommands named on the command line are built (app.cc); help
// must still list every one of them, and another subcommand's options must
// still be refused.
TEST_F(AppTest, HelpListsEverySubcommand) {
  for (const char* help : {"--help", "-h"}) {
    Result r = RunArgs({help});
    EXPECT_EQ(r.code, kExitOk) << help;
    for (const char* name :
         {"devices", "topo", "sim", "cdi", "plugin", "runtime", "extender",
          "dra", "labels", "vfio", "version"}) {
      EXPECT_THAT(r.out, HasSubstr(name)) << help;
    }
  }
  Result plugin = RunArgs({"plugin", "--help"});
  EXPECT_EQ(plugin.code, kExitOk);
  EXPECT_THAT(plugin.out, HasSubstr("--kubelet-socket"));
}

TEST_F(AppTest, AnotherSubcommandsOptionIsAUsageError) {
  Result r = RunArgs({"version", "--kubelet-socket", "/tmp/k.sock"});
  EXPECT_EQ(r.code, kExitUsage) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--kubelet-socket"));
}

TEST_F(AppTest, UsageErrorsExitTwoWithOneLine) {
  for (auto args :
       std::vector<std::vector<const char*>>{{},
                                             {"frobnicate"},
                                             {"devices", "--bogus"},
                                             {"--log-format", "xml", "version"},
                                             {"-v", "-3", "version"}}) {
    Result r = RunArgs(args);
    EXPECT_EQ(r.code, kExitUsage) << r.err;
    EXPECT_THAT(r.err, StartsWith("gpulet: "));
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
}

// `gpulet dra webhook` runs without a node; `gpulet dra` needs one.
TEST_F(AppTest, DraWebhookNeedsItsCertificateAndNoNodeName) {
  unsetenv("NODE_NAME");
  unsetenv("GPULET_WEBHOOK_TLS_CERT_FILE");
  unsetenv("GPULET_WEBHOOK_TLS_KEY_FILE");
  Result webhook = RunArgs({"dra", "webhook", "--address", "127.0.0.1:0"});
  EXPECT_EQ(webhook.code, kExitUsage) << webhook.err;
  EXPECT_THAT(webhook.err,
              HasSubstr("--tls-cert-file and --tls-key-file are required"));
  Result dra = RunArgs({"dra"});
  EXPECT_EQ(dra.code, kExitUsage) << dra.err;
  EXPECT_THAT(dra.err, HasSubstr("--node-name is required"));
  Result help = RunArgs({"dra", "--help"});
  EXPECT_THAT(help.out, HasSubstr("webhook"));
}

TEST_F(AppTest, VerbosityAndLogFormatAccepted) {
  EXPECT_EQ(RunArgs({"-v", "2", "version"}).code, kExitOk);
  EXPECT_EQ(RunArgs({"-v=4", "version"}).code, kExitOk);  // klog's spelling
  EXPECT_EQ(RunArgs({"--v=3", "--log-format", "json", "version"}).code,
            kExitOk);
}

TEST_F(AppTest, ABadVerbosityIsNamed) {
  for (const char* arg : {"-v=x", "--v=-1", "-v=4.5"}) {
    Result r = RunArgs({arg, "version"});
    EXPECT_EQ(r.code, kExitUsage) << arg;
    EXPECT_THAT(r.err, HasSubstr("is not a verbosity level")) << r.err;
    EXPECT_EQ(r.err.find("not in range"), std::string::npos) << r.err;
  }
}

TEST_F(AppTest, SimWithoutSocketIsAUsageError) {
  Result r = RunArgs({"sim", "status"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("GPULET_SIM_SOCKET"));
}

TEST_F(AppTest, SimWithUnreachableSocketIsARuntimeError) {
  Result r = RunArgs({"sim", "--socket", "/tmp/gpulet-no-such.sock", "status"});
  EXPECT_EQ(r.code, kExitRuntimeError);
  EXPECT_THAT(r.err, StartsWith("gpulet: "));
  EXPECT_THAT(r.err, HasSubstr("/tmp/gpulet-no-such.sock"));
}

TEST_F(AppTest, MissingLibraryIsARuntimeErrorNamingThePath) {
  Result r =
      RunArgs({"--nvml-lib", "/nonexistent/libnvidia-ml.so.1", "devices"});
  EXPECT_EQ(r.code, kExitRuntimeError);
  EXPECT_THAT(r.err, StartsWith("gpulet: "));
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/libnvidia-ml.so.1"));
}

TEST_F(AppTest, EnvironmentSuppliesTheLibraryPath) {
  setenv("GPULET_NVML_LIB", "/nonexistent/env/libnvidia-ml.so.1", 1);
  Result r = RunArgs({"topo"});
  unsetenv("GPULET_NVML_LIB");
  EXPECT_EQ(r.code, kExitRuntimeError);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/env/libnvidia-ml.so.1"));
}

}  // namespace
}  // namespace gpulet::cli
