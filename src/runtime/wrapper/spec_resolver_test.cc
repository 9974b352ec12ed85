#include "src/runtime/wrapper/spec_resolver.h"

#include <sys/stat.h>

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/runtime/testing/test_dir.h"
#include "src/runtime/testing/test_specs.h"

namespace gpulet::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Spec files hold a key into this table instead of real JSON.
SpecParser TableParser(std::map<std::string, cdi::Spec> table) {
  return [table](const std::string& text,
                 const std::string& path) -> absl::StatusOr<cdi::Spec> {
    auto it = table.find(text);
    if (it == table.end()) {
      return absl::InvalidArgumentError("cannot parse " + path);
    }
    return it->second;
  };
}

cdi::Spec Renamed(cdi::Spec spec, const std::string& env) {
  spec.edits.env = {env};
  return spec;
}

TEST(SpecResolverTest, LaterDirWinsAndBrokenFilesAreRemembered) {
  testing::TempDir dir;
  dir.Write("etc/nvidia.yaml", "low");
  dir.Write("run/nvidia.json", "high");
  dir.Write("run/broken.yaml", "???");
  dir.Write("run/README", "ignored");
  cdi::Spec low = Renamed(testing::TwoGpuSpec(), "WHO=low");
  cdi::Spec high = Renamed(testing::TwoGpuSpec(), "WHO=high");
  high.devices.resize(1);  // only "0"
  absl::StatusOr<LoadedSpecs> specs = LoadSpecDirs(
      {dir.path() + "/etc", dir.path() + "/run", dir.path() + "/missing"},
      TableParser({{"low", low}, {"high", high}}));
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->specs.size(), 2u);
  EXPECT_THAT(specs->errors, ElementsAre(HasSubstr("broken.yaml")));

  GpuRequest request{{"nvidia.com/gpu=0", "nvidia.com/gpu=1"}, false};
  absl::StatusOr<std::vector<cdi::ContainerEdits>> edits =
      ResolveEdits(*specs, request, "nvidia.com/gpu");
  ASSERT_TRUE(edits.ok()) << edits.status();
  // "0" from the high-priority spec: its spec edits, then the device; "1"
  // only exists in the low one: its spec edits once, then the device.
  ASSERT_EQ(edits->size(), 4u);
  EXPECT_THAT((*edits)[0].env, ElementsAre("WHO=high"));
  EXPECT_EQ((*edits)[1], high.devices[0].edits);
  EXPECT_THAT((*edits)[2].env, ElementsAre("WHO=low"));
  EXPECT_EQ((*edits)[3], low.devices[1].edits);
}

TEST(SpecResolverTest, SpecEditsOnceAndDriverOnly) {
  LoadedSpecs specs{{{"a.json", testing::TwoGpuSpec()}}, {}};
  absl::StatusOr<std::vector<cdi::ContainerEdits>> edits =
      ResolveEdits(specs, {{"nvidia.com/gpu=0", "nvidia.com/gpu=1"}, false},
                   "nvidia.com/gpu");
  ASSERT_TRUE(edits.ok());
  EXPECT_EQ(edits->size(), 3u);
  edits = ResolveEdits(specs, {{}, true}, "nvidia.com/gpu");
  ASSERT_TRUE(edits.ok());
  ASSERT_EQ(edits->size(), 1u);
  EXPECT_EQ((*edits)[0], testing::TwoGpuSpec().edits);
}

// The message reaches the pod's events: it names the request only.
TEST(SpecResolverTest, UnknownDevicesNameOnlyTheRequest) {
  LoadedSpecs specs{{{"a.json", testing::TwoGpuSpec()}}, {"b.json: bad"}};
  absl::StatusOr<std::vector<cdi::ContainerEdits>> edits =
      ResolveEdits(specs, {{"nvidia.com/gpu=7"}, false}, "nvidia.com/gpu");
  ASSERT_FALSE(edits.ok());
  EXPECT_TRUE(absl::IsNotFound(edits.status()));
  EXPECT_EQ(edits.status().message(),
            "unknown CDI device nvidia.com/gpu=7 (kind nvidia.com/gpu)");
  edits = ResolveEdits(specs, {{"example.com/x=0"}, false}, "nvidia.com/gpu");
  EXPECT_EQ(edits.status().message(),
            "unknown CDI device example.com/x=0 (kind example.com/x)");
  edits = ResolveEdits(LoadedSpecs{}, {{}, true}, "nvidia.com/gpu");
  EXPECT_FALSE(edits.ok());
}

TEST(SpecResolverTest, UnreadableDirIsAnError) {
  testing::TempDir dir;
  const std::string file = dir.Write("notadir", "x");
  absl::StatusOr<LoadedSpecs> specs = LoadSpecDirs({file}, TableParser({}));
  ASSERT_FALSE(specs.ok());
  EXPECT_THAT(specs.status().message(), HasSubstr("CDI spec dir " + file));
}

}  // namespace
}  // namespace gpulet::runtime
