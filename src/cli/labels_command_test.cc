// `gpulet labels` against the NVML simulator, loaded through the production
// dlopen path, on every built-in machine profile: the labels docs/labels.md
// promises, per profile and MIG strategy, with and without sharing. One
// process per test (gtest_discover_tests), so each picks its own
// GPULET_SIM_MACHINE. The node is rendered by the simulator: sysfs PCI
// classes, and the DMI product name read as the machine type.
#include "src/cli/labels_command.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/node_render.h"
#include "sim/profiles.h"
#include "src/base/common/file_util.h"
#include "src/cli/app.h"

namespace gpulet::cli {
namespace {

using ::testing::HasSubstr;
using Labels = std::map<std::string, std::string>;

const char kSimLib[] = GPULET_SIM_LIB_DIR "/libnvidia-ml.so.1";

class LabelsCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name :
         {"CONFIG_FILE", "MIG_STRATEGY", "GFD_MIG_STRATEGY", "GFD_OUTPUT_FILE",
          "GFD_ONESHOT", "GFD_SLEEP_INTERVAL", "GFD_NO_TIMESTAMP",
          "GFD_MACHINE_TYPE_FILE", "GPULET_LABELS_PATCH_NODE", "KUBECONFIG",
          "NVIDIA_DRIVER_ROOT", "GFD_USE_NODE_FEATURE_API",
          "USE_NODE_FEATURE_API", "NODE_NAME", "NAMESPACE",
          "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
      ::unsetenv(name);
    }
    char dir[] = "/tmp/gpulet-lbl-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  // Renders `profile`'s node (sysfs, with the DMI product name when the
  // profile has one) and points the simulator at it.
  void Machine(const std::string& profile) {
    ::setenv("GPULET_SIM_MACHINE", profile.c_str(), 1);
    absl::StatusOr<sim::Machine> m = sim::LoadMachine(profile);
    ASSERT_TRUE(m.ok()) << m.status();
    sim::RenderOptions o;
    o.root = root_ + "/node";
    o.dev_nodes = sim::DevNodes::kFiles;
    ASSERT_TRUE(sim::RenderNode(*m, o).ok());
  }

  // Writes a config file `name` with `text`; returns its path.
  std::string Config(const std::string& name, const std::string& text) {
    const std::string path = root_ + "/" + name;
    EXPECT_TRUE(common::WriteFileAtomic(path, text).ok());
    return path;
  }

  int Run(std::vector<std::string> extra, std::string* out_text,
          std::string* err_text) {
    std::vector<std::string> args = {
        "gpulet",
        "--nvml-lib",
        kSimLib,
        "--sysfs-root",
        root_ + "/node/sys",
        "labels",
        "--oneshot",
        "--no-timestamp",
        "--machine-type-file",
        root_ + "/node/sys/class/dmi/id/product_name"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream out;
    std::ostringstream err;
    int code = cli::Run(static_cast<int>(argv.size()), argv.data(), out, err);
    *out_text = out.str();
    *err_text = err.str();
    return code;
  }

  // The labels printed on standard output.
  Labels Label(std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"-o", "-"});
    std::string out, err;
    EXPECT_EQ(Run(extra, &out, &err), kExitOk) << err;
    Labels labels;
    for (absl::string_view line :
         absl::StrSplit(out, '\n', absl::SkipEmpty())) {
      std::vector<std::string> kv =
          absl::StrSplit(line, absl::MaxSplits('=', 1));
      EXPECT_EQ(kv.size(), 2u) << line;
      if (kv.size() == 2) labels[kv[0]] = kv[1];
    }
    return labels;
  }

  std::string root_;
};

// Every key of `want` has its value in `got`; every key of `absent` is
// missing.
void ExpectLabels(const Labels& got, const Labels& want,
                  const std::vector<std::string>& absent = {}) {
  for (const auto& [key, value] : want) {
    auto it = got.find(key);
    if (it == got.end()) {
      ADD_FAILURE() << "missing label " << key;
    } else {
      EXPECT_EQ(it->second, value) << key;
    }
  }
  for (const std::string& key : absent) {
    EXPECT_EQ(got.count(key), 0u) << "unexpected label " << key;
  }
}

// The labels every GPU node gets, for one driver.
Labels Common(const std::string& driver, const std::string& major,
              const std::string& minor, const std::string& rev,
              const std::string& cuda_major, const std::string& cuda_minor) {
  return {
      {"nvidia.com/gpu.mode", "compute"},
      {"nvidia.com/cuda.driver.major", major},
      {"nvidia.com/cuda.driver.minor", minor},
      {"nvidia.com/cuda.driver.rev", rev},
      {"nvidia.com/cuda.driver-version.full", driver},
      {"nvidia.com/cuda.driver-version.major", major},
      {"nvidia.com/cuda.driver-version.minor", minor},
      {"nvidia.com/cuda.driver-version.revision", rev},
      {"nvidia.com/cuda.runtime.major", cuda_major},
      {"nvidia.com/cuda.runtime.minor", cuda_minor},
      {"nvidia.com/cuda.runtime-version.major", cuda_major},
      {"nvidia.com/cuda.runtime-version.minor", cuda_minor},
      {"nvidia.com/cuda.runtime-version.full", cuda_major + "." + cuda_minor},
      {"nvidia.com/mps.capable", "false"}};
}

Labels Driver550() { return Common("550.54.15", "550", "54", "15", "12", "4"); }
Labels Driver580() { return Common("580.82.07", "580", "82", "07", "13", "0"); }

Labels Gpus(const std::string& product, const std::string& count,
            const std::string& memory, const std::string& family,
            const std::string& cc_major, const std::string& cc_minor,
            const std::string& mig_capable) {
  return {{"nvidia.com/gpu.product", product},
          {"nvidia.com/gpu.count", count},
          {"nvidia.com/gpu.memory", memory},
          {"nvidia.com/gpu.family", family},
          {"nvidia.com/gpu.compute.major", cc_major},
          {"nvidia.com/gpu.compute.minor", cc_minor},
          {"nvidia.com/gpu.replicas", "1"},
          {"nvidia.com/gpu.sharing-strategy", "none"},
          {"nvidia.com/mig.capable", mig_capable}};
}

Labels MachineType(const std::string& type) {
  return {{"nvidia.com/gpu.machine", type}};
}

Labels Merge(Labels a, const Labels& b) {
  for (const auto& [k, v] : b) a[k] = v;
  return a;
}

// MIG labels of one profile under `prefix` ("nvidia.com/mig-1g.5gb").
Labels MigLabels(const std::string& prefix, const std::string& product,
                 const std::string& count, const std::string& memory,
                 const std::string& sms, const std::string& gi,
                 const std::string& ci) {
  return {
      {prefix + ".product", product}, {prefix + ".count", count},
      {prefix + ".memory", memory},   {prefix + ".multiprocessors", sms},
      {prefix + ".slices.gi", gi},    {prefix + ".slices.ci", ci},
      {prefix + ".replicas", "1"},    {prefix + ".sharing-strategy", "none"}};
}

const std::vector<std::string> kNoMig = {"nvidia.com/mig.strategy",
                                         "nvidia.com/gpu.clique",
                                         "nvidia.com/gfd.timestamp"};

TEST_F(LabelsCommandTest, DgxH100) {
  Machine("dgx-h100");
  ExpectLabels(
      Label(),
      Merge(Merge(Driver550(), Gpus("NVIDIA-H100-80GB-HBM3", "8", "81559",
                                    "hopper", "9", "0", "true")),
            MachineType("DGX-H100")),
      kNoMig);
}

TEST_F(LabelsCommandTest, DgxA100) {
  Machine("dgx-a100");
  ExpectLabels(
      Label(),
      Merge(Merge(Driver550(), Gpus("NVIDIA-A100-SXM4-40GB", "8", "40960",
                                    "ampere", "8", "0", "true")),
            MachineType("DGX-A100")),
      kNoMig);
}

TEST_F(LabelsCommandTest, HgxH200) {
  Machine("hgx-h200");
  ExpectLabels(Label(),
               Merge(Merge(Common("570.172.08", "570", "172", "08", "12", "8"),
                           Gpus("NVIDIA-H200", "8", "143771", "hopper", "9",
                                "0", "true")),
                     MachineType("PowerEdge-XE9680")),
               kNoMig);
}

TEST_F(LabelsCommandTest, DgxB200) {
  Machine("dgx-b200");
  ExpectLabels(Label(),
               Merge(Merge(Driver580(), Gpus("NVIDIA-B200", "8", "183359",
                                             "blackwell", "10", "0", "true")),
                     MachineType("DGX-B200")),
               kNoMig);
}

TEST_F(LabelsCommandTest, Islands16) {
  Machine("islands-16");
  ExpectLabels(
      Label(),
      Merge(Merge(Driver550(), Gpus("NVIDIA-A100-SXM4-80GB", "16", "81920",
                                    "ampere", "8", "0", "true")),
            MachineType("unknown")),
      kNoMig);
}

TEST_F(LabelsCommandTest, PcieT4) {
  Machine("pcie-t4");
  Labels want =
      Merge(Common("535.161.08", "535", "161", "08", "12", "2"),
            Gpus("Tesla-T4", "4", "15360", "turing", "7", "5", "false"));
  want["nvidia.com/gpu.machine"] = "PowerEdge-R740";
  ExpectLabels(Label(), want, kNoMig);
}

TEST_F(LabelsCommandTest, Gb200NvlHasTheClique) {
  Machine("gb200-nvl");
  Labels want = Merge(Driver580(), Gpus("NVIDIA-GB200", "4", "189471",
                                        "blackwell", "10", "0", "true"));
  want["nvidia.com/gpu.machine"] = "unknown";
  want["nvidia.com/gpu.clique"] = "190abd46-89ce-5965-bb4c-944992ac3cd5.32766";
  ExpectLabels(Label(), want, {"nvidia.com/mig.strategy"});
}

TEST_F(LabelsCommandTest, A100MigUnderEachStrategy) {
  Machine("a100-mig");
  const Labels gpus =
      Merge(Merge(Driver550(), Gpus("NVIDIA-A100-SXM4-40GB", "4", "40960",
                                    "ampere", "8", "0", "true")),
            MachineType("PowerEdge-XE8545"));
  ExpectLabels(Label(), gpus,
               {"nvidia.com/mig.strategy", "nvidia.com/mig-1g.5gb.count"});

  Labels mixed = Label({"--mig-strategy", "mixed"});
  ExpectLabels(mixed, gpus);
  const std::string p = "NVIDIA-A100-SXM4-40GB-MIG-";
  ExpectLabels(
      mixed, Merge(Merge(MigLabels("nvidia.com/mig-1g.5gb", p + "1g.5gb", "8",
                                   "4864", "14", "1", "1"),
                         MigLabels("nvidia.com/mig-2g.10gb", p + "2g.10gb", "1",
                                   "9984", "28", "2", "2")),
                   MigLabels("nvidia.com/mig-3g.20gb", p + "3g.20gb", "3",
                             "20096", "42", "3", "3")));
  EXPECT_EQ(mixed["nvidia.com/mig.strategy"], "mixed");
  EXPECT_EQ(mixed["nvidia.com/mig-1g.5gb.engines.copy"], "1");

  // Mixed layouts and a whole GPU do not fit single: GFD's INVALID labels.
  Labels single = Label({"--mig-strategy", "single"});
  EXPECT_EQ(single["nvidia.com/mig.strategy"], "single");
  EXPECT_EQ(single["nvidia.com/gpu.product"],
            "NVIDIA-A100-SXM4-40GB-MIG-INVALID");
  EXPECT_EQ(single["nvidia.com/gpu.count"], "0");
  EXPECT_EQ(single["nvidia.com/gpu.replicas"], "0");
  EXPECT_EQ(single["nvidia.com/gpu.memory"], "0");
}

TEST_F(LabelsCommandTest, A100MigSingle) {
  Machine("a100-mig-single");
  Labels got = Label({"--mig-strategy", "single"});
  ExpectLabels(got, Driver550());
  ExpectLabels(got,
               {{"nvidia.com/mig.strategy", "single"},
                {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"},
                {"nvidia.com/gpu.count", "14"},
                {"nvidia.com/gpu.memory", "4864"},
                {"nvidia.com/gpu.multiprocessors", "14"},
                {"nvidia.com/gpu.slices.gi", "1"},
                {"nvidia.com/gpu.slices.ci", "1"},
                {"nvidia.com/gpu.replicas", "1"},
                {"nvidia.com/gpu.family", "ampere"}});
}

TEST_F(LabelsCommandTest, B200MigMixed) {
  Machine("b200-mig");
  Labels got = Label({"--mig-strategy", "mixed"});
  ExpectLabels(got,
               Merge(Merge(Driver580(), Gpus("NVIDIA-B200", "8", "183359",
                                             "blackwell", "10", "0", "true")),
                     MachineType("DGX-B200")));
  EXPECT_EQ(got["nvidia.com/mig-1g.23gb.count"], "8");
  EXPECT_EQ(got["nvidia.com/mig-1g.45gb.count"], "3");
  EXPECT_EQ(got["nvidia.com/mig-2g.45gb.count"], "1");
  EXPECT_EQ(got["nvidia.com/mig-3g.90gb.count"], "1");
  EXPECT_EQ(got["nvidia.com/mig-7g.180gb.count"], "1");
  EXPECT_EQ(got["nvidia.com/mig-1g.23gb.me.count"], "1");
  EXPECT_EQ(got["nvidia.com/mig-1g.23gb.me.product"],
            "NVIDIA-B200-MIG-1g.23gbme");
  EXPECT_EQ(got["nvidia.com/mig-1g.23gb.product"], "NVIDIA-B200-MIG-1g.23gb");
}

TEST_F(LabelsCommandTest, RtxPro6000MigMixed) {
  Machine("rtx-pro-6000-mig");
  Labels got = Label({"--mig-strategy", "mixed"});
  ExpectLabels(got, Driver580());
  // Every GPU is in MIG mode: nvidia.com/gpu.* without sharing.
  ExpectLabels(got, {{"nvidia.com/gpu.product",
                      "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"},
                     {"nvidia.com/gpu.count", "4"},
                     {"nvidia.com/gpu.memory", "97887"},
                     {"nvidia.com/gpu.family", "blackwell"},
                     {"nvidia.com/gpu.compute.major", "12"},
                     {"nvidia.com/gpu.replicas", "0"},
                     {"nvidia.com/mig.capable", "true"}});
  EXPECT_EQ(got["nvidia.com/mig-1g.24gb-me.count"], "2");
  EXPECT_EQ(got["nvidia.com/mig-2g.48gb.me.all.product"],
            "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-MIG-2g.48gbme.all");
  EXPECT_EQ(got["nvidia.com/mig-4g.96gb.gfx.count"], "1");
}

TEST_F(LabelsCommandTest, TimeSlicingConfigs) {
  Machine("dgx-h100");
  const std::string shared = Config("shared.yaml", R"(version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
)");
  ExpectLabels(Label({"--config-file", shared}),
               {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-SHARED"},
                {"nvidia.com/gpu.replicas", "4"},
                {"nvidia.com/gpu.sharing-strategy", "time-slicing"},
                {"nvidia.com/gpu.count", "8"}});
  const std::string renamed = Config("renamed.yaml", R"(version: v1
sharing:
  timeSlicing:
    renameByDefault: true
    resources:
    - name: nvidia.com/gpu
      replicas: 2
)");
  ExpectLabels(Label({"--config-file", renamed}),
               {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                {"nvidia.com/gpu.replicas", "2"},
                {"nvidia.com/gpu.sharing-strategy", "time-slicing"}});
  // CONFIG_FILE as the plugin reads it.
  ::setenv("CONFIG_FILE", shared.c_str(), 1);
  ExpectLabels(Label(), {{"nvidia.com/gpu.replicas", "4"}});
}

TEST_F(LabelsCommandTest, MpsConfig) {
  Machine("pcie-t4");
  const std::string mps = Config("mps.yaml", R"(version: v1
flags:
  mpsRoot: /run/nvidia/mps
sharing:
  mps:
    resources:
    - name: nvidia.com/gpu
      replicas: 3
)");
  ExpectLabels(Label({"--config-file", mps}),
               {{"nvidia.com/gpu.product", "Tesla-T4-SHARED"},
                {"nvidia.com/gpu.replicas", "3"},
                {"nvidia.com/gpu.sharing-strategy", "mps"},
                {"nvidia.com/mps.capable", "true"}});
}

TEST_F(LabelsCommandTest, MigMixedTimeSlicedProfile) {
  Machine("a100-mig");
  const std::string config = Config("mixed.yaml", R"(version: v1
flags:
  migStrategy: mixed
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/mig-1g.5gb
      replicas: 2
)");
  Labels got = Label({"--config-file", config});
  ExpectLabels(got, {{"nvidia.com/mig-1g.5gb.product",
                      "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED"},
                     {"nvidia.com/mig-1g.5gb.replicas", "2"},
                     {"nvidia.com/mig-1g.5gb.sharing-strategy", "time-slicing"},
                     {"nvidia.com/mig-3g.20gb.replicas", "1"},
                     {"nvidia.com/gpu.replicas", "1"}});
}

TEST_F(LabelsCommandTest, NoGpusGivesTheMachineOnly) {
  Machine("none");
  EXPECT_EQ(Label(), (Labels{{"nvidia.com/gpu.machine", "unknown"}}));
}

TEST_F(LabelsCommandTest, WritesTheFeatureFileAtomically) {
  Machine("pcie-t4");
  std::string out, err;
  const std::string file = root_ + "/gfd";
  ASSERT_EQ(Run({"--output-file", file}, &out, &err), kExitOk) << err;
  EXPECT_EQ(out, "");
  absl::StatusOr<std::string> text = common::ReadFile(file);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("nvidia.com/gpu.product=Tesla-T4\n"));
  // No temporary file left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(root_)) {
    files += e.path().filename().string().rfind("gfd", 0) == 0;
  }
  EXPECT_EQ(files, 1);
}

TEST_F(LabelsCommandTest, BadInputIsAClearErrorAndANonZeroExit) {
  Machine("pcie-t4");
  std::string out, err;
  EXPECT_EQ(Run({"-o", root_ + "/missing/gfd"}, &out, &err), kExitRuntimeError);
  EXPECT_THAT(err, HasSubstr(root_ + "/missing/gfd"));
  EXPECT_THAT(err, HasSubstr("directory " + root_ + "/missing does not exist"));
  EXPECT_EQ(err.find(".tmp"), std::string::npos) << err;
  EXPECT_EQ(Run({"--mig-strategy", "half"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("--mig-strategy"));
  EXPECT_EQ(Run({"--sleep-interval", "soon"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("--sleep-interval"));
  EXPECT_EQ(Run({"--patch-node", "Bad_Name"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("Bad_Name"));
  EXPECT_EQ(
      Run({"--patch-node", "n1", "--kubeconfig", root_ + "/nope"}, &out, &err),
      kExitRuntimeError);
  EXPECT_THAT(err, HasSubstr(root_ + "/nope"));
  EXPECT_EQ(Run({"--config-file", root_ + "/nope.yaml"}, &out, &err),
            kExitUsage);
  EXPECT_THAT(err, HasSubstr(root_ + "/nope.yaml"));
}

// GFD's variables are reported as variables, not as the flags they stand
// in for; a flag given on the command line hides its variable.
TEST_F(LabelsCommandTest, ABadVariableIsNamedAsAVariable) {
  Machine("pcie-t4");
  std::string out, err;
  ::setenv("GFD_SLEEP_INTERVAL", "soon", 1);
  EXPECT_EQ(Run({}, &out, &err), kExitUsage);
  EXPECT_EQ(err,
            "gpulet: environment variable GFD_SLEEP_INTERVAL: \"soon\" is not "
            "a positive duration (e.g. 60s, 1m30s)\n");
  EXPECT_EQ(Run({"-o", "-", "--sleep-interval", "1m"}, &out, &err), kExitOk)
      << err;
  ::unsetenv("GFD_SLEEP_INTERVAL");

  ::setenv("GFD_MIG_STRATEGY", "half", 1);
  EXPECT_EQ(Run({}, &out, &err), kExitUsage);
  EXPECT_THAT(err,
              HasSubstr("gpulet: environment variable GFD_MIG_STRATEGY: "));
  EXPECT_EQ(err.find("--mig-strategy"), std::string::npos) << err;
  ::unsetenv("GFD_MIG_STRATEGY");

  // Without --oneshot on the command line (Run passes it); the bad
  // --sleep-interval ends the run should the variable be ignored.
  ::setenv("GFD_ONESHOT", "maybe", 1);
  const char* argv[] = {"gpulet", "--nvml-lib",       kSimLib, "labels", "-o",
                        "-",      "--sleep-interval", "soon"};
  std::ostringstream no_out;
  std::ostringstream direct_err;
  EXPECT_EQ(cli::Run(8, argv, no_out, direct_err), kExitUsage);
  EXPECT_EQ(direct_err.str(),
            "gpulet: environment variable GFD_ONESHOT: \"maybe\" is not "
            "true or false\n");
  ::unsetenv("GFD_ONESHOT");

  // A good variable still works.
  ::setenv("GFD_OUTPUT_FILE", "-", 1);
  EXPECT_EQ(Run({}, &out, &err), kExitOk) << err;
  EXPECT_THAT(out, HasSubstr("nvidia.com/gpu.product=Tesla-T4\n"));
  ::unsetenv("GFD_OUTPUT_FILE");
}

// The NodeFeature API asked for without what it needs, or with a Node patch
// beside it, is a usage error; not given, and without a node name or an API
// server, the feature file is written as before.
TEST_F(LabelsCommandTest, NodeFeatureApiFlagsAreChecked) {
  Machine("pcie-t4");
  std::string out, err;
  EXPECT_EQ(Run({"--use-node-feature-api"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("NODE_NAME"));
  EXPECT_EQ(
      Run({"--use-node-feature-api", "--node-name", "Bad_Name"}, &out, &err),
      kExitUsage);
  EXPECT_THAT(err, HasSubstr("Bad_Name"));
  EXPECT_EQ(Run({"--use-node-feature-api=true", "--node-name", "n1",
                 "--namespace", "Bad_NS"},
                &out, &err),
            kExitUsage);
  EXPECT_THAT(err, HasSubstr("Bad_NS"));
  EXPECT_EQ(
      Run({"--use-node-feature-api", "--node-name", "n1", "--patch-node", "n1"},
          &out, &err),
      kExitUsage);
  EXPECT_THAT(err, HasSubstr("not both"));
  ::setenv("USE_NODE_FEATURE_API", "maybe", 1);
  EXPECT_EQ(Run({}, &out, &err), kExitUsage);
  EXPECT_EQ(err,
            "gpulet: environment variable USE_NODE_FEATURE_API: \"maybe\" is "
            "not true or false\n");
  // GFD's first variable wins over its second.
  ::setenv("GFD_USE_NODE_FEATURE_API", "true", 1);
  EXPECT_EQ(Run({}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("NODE_NAME"));
  ::unsetenv("GFD_USE_NODE_FEATURE_API");
  ::unsetenv("USE_NODE_FEATURE_API");

  // Not given: a node name but no API server to ask (no in-cluster
  // environment, no kubeconfig) means the file.
  const std::string file = root_ + "/gfd";
  EXPECT_EQ(Run({"--node-name", "n1", "-o", file}, &out, &err), kExitOk) << err;
  EXPECT_TRUE(std::filesystem::exists(file));
  // Off: the file, and no API server asked (the kubeconfig is never read).
  std::filesystem::remove(file);
  EXPECT_EQ(Run({"--use-node-feature-api=false", "--node-name", "n1",
                 "--kubeconfig", root_ + "/nope", "-o", file},
                &out, &err),
            kExitOk)
      << err;
  EXPECT_TRUE(std::filesystem::exists(file));
}

}  // namespace
}  // namespace gpulet::cli
