#include "src/runtime/engineconfig/configure.h"

#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/runtime/engineconfig/unified_diff.h"

namespace gpulet::engineconfig {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string TestData(const std::string& file) {
  return std::string(GPULET_SOURCE_DIR) +
         "/src/runtime/engineconfig/testdata/" + file;
}

std::string Read(const std::string& file) {
  if (file.empty()) return "";
  std::ifstream in(TestData(file), std::ios::binary);
  EXPECT_TRUE(in.good()) << file;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

RuntimeOptions Options(bool set_as_default, bool enable_cdi) {
  RuntimeOptions o;
  o.set_as_default = set_as_default;
  o.enable_cdi = enable_cdi;
  return o;
}

// A real or realistic config, the options, and the file the command must
// turn it into (testdata/*.want.*). containerd 1.6's is `containerd config
// default` of Debian's 1.6.20; the 1.7 and 2.0 ones are written by hand
// from those versions' documented defaults. An empty input is a file that
// does not exist yet.
struct GoldenCase {
  Engine engine;
  std::string input;
  RuntimeOptions options;
  std::string want;
};

std::vector<GoldenCase> GoldenCases() {
  return {
      {Engine::kContainerd, "containerd-1.6-default.toml", Options(true, false),
       "containerd-1.6-default.want.toml"},
      {Engine::kContainerd, "containerd-1.6-commented.toml",
       Options(false, true), "containerd-1.6-commented.want.toml"},
      {Engine::kContainerd, "containerd-1.7-default.toml", Options(true, true),
       "containerd-1.7-default.want.toml"},
      {Engine::kContainerd, "containerd-2.0-default.toml", Options(true, true),
       "containerd-2.0-default.want.toml"},
      {Engine::kContainerd, "", Options(false, false),
       "containerd-empty.want.toml"},
      {Engine::kCrio, "crio-dropin.conf", Options(true, false),
       "crio-dropin.want.conf"},
      {Engine::kCrio, "", Options(false, false), "crio-empty.want.conf"},
      {Engine::kDocker, "docker-daemon.json", Options(true, true),
       "docker-daemon.want.json"},
      {Engine::kDocker, "", Options(false, false), "docker-empty.want.json"},
  };
}

TEST(ConfigureTest, RealConfigsBecomeTheExpectedFiles) {
  for (const GoldenCase& c : GoldenCases()) {
    SCOPED_TRACE(c.want);
    const std::string input = Read(c.input);
    absl::StatusOr<std::string> out =
        ConfigureEngine(c.engine, input, "in", c.options);
    ASSERT_TRUE(out.ok()) << out.status();
    if (getenv("GPULET_UPDATE_GOLDEN") != nullptr) {
      std::ofstream(TestData(c.want), std::ios::binary) << *out;
    }
    EXPECT_EQ(*out, Read(c.want)) << UnifiedDiff(Read(c.want), *out, c.want);

    // Run again on its own output: nothing left to do.
    absl::StatusOr<std::string> again =
        ConfigureEngine(c.engine, *out, "in", c.options);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, *out);
  }
}

TEST(ConfigureTest, CommentsAndOtherLinesAreKept) {
  for (const GoldenCase& c : GoldenCases()) {
    if (c.engine == Engine::kDocker || c.input.empty()) continue;
    SCOPED_TRACE(c.input);
    absl::StatusOr<std::string> out =
        ConfigureEngine(c.engine, Read(c.input), "in", c.options);
    ASSERT_TRUE(out.ok()) << out.status();
    // Every line taken out is one whose value the options set.
    for (absl::string_view line :
         absl::StrSplit(UnifiedDiff(Read(c.input), *out, "f"), '\n')) {
      if (!absl::StartsWith(line, "-") || absl::StartsWith(line, "---")) {
        continue;
      }
      EXPECT_THAT(std::string(line),
                  ::testing::AnyOf(HasSubstr("default_runtime_name"),
                                   HasSubstr("default_runtime ="),
                                   HasSubstr("enable_cdi")));
    }
  }
}

TEST(ConfigureTest, ExistingRuntimeIsCompletedNotDuplicated) {
  const std::string input =
      "version = 2\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.gpulet]\n"
      "  runtime_type = \"io.containerd.runc.v2\"\n"
      "  container_annotations = [\"example.com/*\"]  # ours\n"
      "  "
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.gpulet."
      "options]\n"
      "    BinaryName = \"/opt/old/gpulet-runtime\"\n";
  absl::StatusOr<std::string> out =
      ConfigureEngine(Engine::kContainerd, input, "in", RuntimeOptions{});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(
      *out,
      "version = 2\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.gpulet]\n"
      "  runtime_type = \"io.containerd.runc.v2\"\n"
      "  container_annotations = [\"example.com/*\", \"cdi.k8s.io/*\"]  # "
      "ours\n"
      "  "
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.gpulet."
      "options]\n"
      "    BinaryName = \"/usr/bin/gpulet-runtime\"\n");
}

TEST(ConfigureTest, NameAndPathAndPrefixAreTheOptions) {
  RuntimeOptions o;
  o.name = "gpu";
  o.path = "/opt/gpulet/bin/gpulet-runtime";
  o.cdi_annotation_prefix = "example.com/";
  o.set_as_default = true;
  absl::StatusOr<std::string> out = ConfigureEngine(Engine::kCrio, "", "in", o);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "[crio.runtime]\n"
            "default_runtime = \"gpu\"\n"
            "\n"
            "[crio.runtime.runtimes.gpu]\n"
            "runtime_path = \"/opt/gpulet/bin/gpulet-runtime\"\n"
            "runtime_type = \"oci\"\n");
  out = ConfigureEngine(Engine::kContainerd, "", "in", o);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(*out, HasSubstr("container_annotations = [\"example.com/*\"]"));
  EXPECT_THAT(*out, HasSubstr("default_runtime_name = \"gpu\""));
  EXPECT_THAT(*out,
              HasSubstr("BinaryName = \"/opt/gpulet/bin/gpulet-runtime\""));
}

struct ErrorCase {
  Engine engine;
  std::string text;
  std::string want;
};

TEST(ConfigureTest, BadInputIsAClearError) {
  const ErrorCase cases[] = {
      {Engine::kContainerd, "version = 2\n[plugins\n", "in:2: invalid TOML"},
      {Engine::kContainerd, "version = 2\n\n[grpc]\naddress = \n",
       "in:4: invalid TOML"},
      {Engine::kContainerd, "version = 1\n", "in:1: version = 1: gpulet edits"},
      {Engine::kContainerd, "[plugins.cri]\nx = 1\n", "in: no `version` key"},
      {Engine::kContainerd,
       "version = 2\nplugins = { \"io.containerd.grpc.v1.cri\" = { a = 1 } }\n",
       "in:2: plugins is an inline table"},
      {Engine::kContainerd,
       "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
       "runtimes = \"runc\"\n",
       "in:3: plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes is a "
       "string, not a table"},
      {Engine::kContainerd,
       "version = 2\n"
       "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.gpulet]\n"
       "container_annotations = \"cdi.k8s.io/*\"\n",
       "in:3: plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.gpulet."
       "container_annotations must be an array of strings"},
      {Engine::kCrio, "[crio.runtime\n", "in:1: invalid TOML"},
      {Engine::kDocker, "{\n  \"a\": 1,\n}\n", "in:3:1: invalid JSON"},
      {Engine::kDocker, "[]\n",
       "in: the top level must be an object, not array"},
      {Engine::kDocker, "{\"runtimes\": \"runc\"}\n",
       "in: \"runtimes\" must be an object, not string"},
  };
  for (const ErrorCase& c : cases) {
    absl::StatusOr<std::string> out =
        ConfigureEngine(c.engine, c.text, "in", Options(true, true));
    ASSERT_FALSE(out.ok()) << c.text << " gave " << *out;
    EXPECT_THAT(std::string(out.status().message()), StartsWith(c.want))
        << c.text;
  }
}

TEST(ConfigureTest, BadOptionsAreNamed) {
  RuntimeOptions o;
  o.name = "two words";
  EXPECT_THAT(
      std::string(
          ConfigureEngine(Engine::kDocker, "", "in", o).status().message()),
      HasSubstr("--runtime-name"));
  o = RuntimeOptions{};
  o.path = "gpulet-runtime";
  EXPECT_THAT(
      std::string(
          ConfigureEngine(Engine::kDocker, "", "in", o).status().message()),
      HasSubstr("--runtime-path"));
  EXPECT_FALSE(ParseEngine("podman").ok());
  EXPECT_EQ(DefaultConfigPath(*ParseEngine("crio")),
            "/etc/crio/crio.conf.d/99-gpulet.conf");
}

}  // namespace
}  // namespace gpulet::engineconfig
