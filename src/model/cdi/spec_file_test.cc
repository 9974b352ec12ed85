#include "src/model/cdi/spec_file.h"

#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/model/testing/test_root.h"

namespace gpulet::cdi {
namespace {

using ::testing::HasSubstr;

Spec Small() {
  Spec spec;
  spec.cdi_version = "0.5.0";
  spec.kind = "nvidia.com/gpu";
  Device d;
  d.name = "0";
  d.edits.device_nodes.push_back({.path = "/dev/nvidia0"});
  spec.devices = {d};
  return spec;
}

bool Exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

TEST(SpecFileTest, WritesAtomicallyAndReplacesTheOtherFormat) {
  testing::TempRoot root;
  std::string dir = root.Under("/var/run/cdi");
  absl::StatusOr<std::string> json = WriteSpecFile(dir, Small(), Format::kJson);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(*json, dir + "/nvidia.com-gpu.json");
  EXPECT_EQ(ReadSpecFile(*json).value(), Small());

  absl::StatusOr<std::string> yaml = WriteSpecFile(dir, Small(), Format::kYaml);
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(*yaml, dir + "/nvidia.com-gpu.yaml");
  EXPECT_FALSE(Exists(*json));
  EXPECT_EQ(ReadSpecFile(*yaml).value(), Small());
}

TEST(SpecFileTest, RefusesInvalidSpecsAndNamesBadFiles) {
  testing::TempRoot root;
  Spec bad = Small();
  bad.devices.clear();
  EXPECT_FALSE(WriteSpecFile(root.path(), bad, Format::kYaml).ok());
  EXPECT_FALSE(Exists(root.Under("/nvidia.com-gpu.yaml")));

  root.Write("/x.yaml",
             "cdiVersion: 0.3.0\nkind: nvidia.com/gpu\ndevices:\n"
             "- name: \"0\"\n  containerEdits: {env: [A=1]}\n");
  absl::StatusOr<Spec> spec = ReadSpecFile(root.Under("/x.yaml"));
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr(root.Under("/x.yaml")));
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("0.5.0"));
  EXPECT_EQ(ReadSpecFile(root.Under("/none.yaml")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(SpecFileTest, NamesFilesLikeTheReferenceLibrary) {
  EXPECT_EQ(SpecFileName("nvidia.com/gpu", Format::kYaml),
            "nvidia.com-gpu.yaml");
  EXPECT_EQ(SpecFileName("example.com/mig", Format::kJson),
            "example.com-mig.json");
}

}  // namespace
}  // namespace gpulet::cdi
