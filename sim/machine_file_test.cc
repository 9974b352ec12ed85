// Machines loaded from a file: by path, errors naming the file, size
// limits, the documented complete example, and an unknown profile name.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/machine_parser.h"
#include "sim/profiles.h"
#include "sim/testing/machine_checks.h"

namespace gpulet::sim {
namespace {

using test_machines::Load;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class LoadMachineFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpulet-sim-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& contents) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << contents;
    return path;
  }

  std::string dir_;
};

TEST_F(LoadMachineFileTest, LoadsAFileByPath) {
  std::string path = Write("m.yaml", std::string(*ProfileYaml("pcie-t4")));
  Machine m = Load(path);
  EXPECT_EQ(m.source, path);
  EXPECT_EQ(m.gpus.size(), 4u);
}

TEST_F(LoadMachineFileTest, ErrorsNameTheFile) {
  std::string path = Write("bad.yml", "gpus: [\n");
  absl::StatusOr<Machine> m = LoadMachine(path);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), StartsWith(path + ":"));
}

TEST_F(LoadMachineFileTest, MissingFile) {
  absl::StatusOr<Machine> m = LoadMachine(dir_ + "/absent.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr(dir_ + "/absent.yaml"));
}

TEST_F(LoadMachineFileTest, HugeFileRejectedBeforeReading) {
  std::string path =
      Write("huge.yaml", std::string(kMaxMachineFileBytes + 10, '#'));
  absl::StatusOr<Machine> m = LoadMachine(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr("the limit is 1048576"));
}

// docs/machine-file.md promises that its complete example loads.
TEST(MachineFileDocTest, CompleteExampleParses) {
  std::ifstream in(GPULET_SOURCE_DIR "/docs/machine-file.md");
  ASSERT_TRUE(in) << "docs/machine-file.md not found";
  std::string doc((std::istreambuf_iterator<char>(in)),
                  std::istreambuf_iterator<char>());
  size_t section = doc.find("## A complete example");
  ASSERT_NE(section, std::string::npos);
  size_t begin = doc.find("```yaml\n", section);
  ASSERT_NE(begin, std::string::npos);
  begin += 8;
  size_t end = doc.find("```", begin);
  absl::StatusOr<Machine> m =
      ParseMachine(doc.substr(begin, end - begin), "machine-file.md");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->gpus.size(), 2u);
  EXPECT_EQ(m->gpus[1].mig_devices.size(), 3u);
  EXPECT_EQ(m->gpus[0].nvlinks.size(), 12u);
}

TEST(LoadMachineTest, UnknownProfileListsBuiltIns) {
  absl::StatusOr<Machine> m = LoadMachine("dgx-z");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(m.status().message()),
              StartsWith("unknown machine profile \"dgx-z\" (built-in: "
                         "a100-mig, a100-mig-single, b200-mig, dgx-a100, "
                         "dgx-b200, dgx-h100, gb200-nvl, hgx-h200, "
                         "islands-16, mixed-memory, mixed-vfio, no-driver, "
                         "none, pcie-t4, rtx-pro-6000-mig, vfio-groups, "
                         "vfio-iommufd, vgpu-host"));
}

}  // namespace
}  // namespace gpulet::sim
