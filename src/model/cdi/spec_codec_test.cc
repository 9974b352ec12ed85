#include "src/model/cdi/spec_codec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::cdi {
namespace {

using ::testing::HasSubstr;

// Every field the model has, with values that are awkward in YAML.
Spec FullSpec() {
  Spec spec;
  spec.cdi_version = "0.7.0";
  spec.kind = "nvidia.com/gpu";
  spec.annotations = {{"a", "1"}, {"b", "true"}};
  Device gpu;
  gpu.name = "0";
  gpu.annotations = {{"x", "y"}};
  gpu.edits.device_nodes.push_back(
      {"/dev/nvidia0", "/run/d/dev/nvidia0", "c", 195, 0, 0666, "rw", 0, 44});
  Device mig;
  mig.name = "0:1";
  mig.edits.device_nodes.push_back({.path = "/dev/nvidia-caps/nvidia-cap12"});
  mig.edits.additional_gids = {44, 0};
  spec.devices = {gpu, mig};
  spec.edits.env = {"NVIDIA_VISIBLE_DEVICES=void", "EMPTY="};
  spec.edits.mounts.push_back({"/run/d/usr/lib/libcuda.so.550.54.15",
                               "/usr/lib/libcuda.so.550.54.15",
                               "bind",
                               {"ro", "nosuid"}});
  spec.edits.hooks.push_back(
      {"createContainer",
       "/usr/bin/gpulet-runtime",
       {"gpulet-runtime", "hook", "update-ldcache", "--folder", "/usr/lib"},
       {"A=b"},
       5});
  return spec;
}

TEST(SpecCodecTest, RoundTripsThroughJsonAndYaml) {
  Spec spec = FullSpec();
  for (Format format : {Format::kJson, Format::kYaml}) {
    std::string text = FormatSpec(spec, format);
    absl::StatusOr<Spec> back = ParseSpec(text, "t");
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
    EXPECT_EQ(*back, spec) << text;
  }
}

TEST(SpecCodecTest, WritesTheReferenceFieldNamesAndOmitsEmptyOnes) {
  Spec spec;
  spec.cdi_version = "0.5.0";
  spec.kind = "nvidia.com/gpu";
  Device d;
  d.name = "0";
  d.edits.device_nodes.push_back(
      {.path = "/dev/nvidia0", .type = "c", .major = 195, .minor = 0});
  spec.devices.push_back(d);
  EXPECT_EQ(SpecToJsonValue(spec).dump(),
            R"({"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[)"
            R"({"name":"0","containerEdits":{"deviceNodes":[{"path":)"
            R"("/dev/nvidia0","type":"c","major":195,"minor":0}]}}]})");
  EXPECT_EQ(SpecToYaml(spec),
            "---\ncdiVersion: \"0.5.0\"\nkind: nvidia.com/gpu\ndevices:\n"
            "  - name: \"0\"\n    containerEdits:\n      deviceNodes:\n"
            "        - path: /dev/nvidia0\n          type: c\n"
            "          major: 195\n          minor: 0\n");
}

TEST(SpecCodecTest, ReadsWhatTheGoLibraryWrites) {
  // yaml.v3 output style: unquoted version, 4-space lists, null edits.
  absl::StatusOr<Spec> spec = ParseSpec(
      "---\ncdiVersion: 0.6.0\nkind: vendor.com/device\ndevices:\n"
      "    - name: dev\n      containerEdits:\n        env:\n"
      "            - FOO=bar\ncontainerEdits:\n  deviceNodes: null\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->cdi_version, "0.6.0");
  EXPECT_EQ(spec->devices[0].edits.env, std::vector<std::string>{"FOO=bar"});
}

TEST(SpecCodecTest, StrictErrorsNameTheField) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"cdiVersion: 0.5.0\nkind: a/b\nextra: 1\n",
       "t: (top level): unknown field \"extra\""},
      {"devices:\n- name: x\n  containerEdits:\n    deviceNodes:\n"
       "    - path: /d\n      hostpath: /h\n",
       "t: devices[0].containerEdits.deviceNodes[0]: unknown field "
       "\"hostpath\""},
      {"devices:\n- name: x\n  edits: {}\n",
       "devices[0]: unknown field \"edits\""},
      {"containerEdits:\n  intelRdt: {closID: x}\n",
       "containerEdits: field \"intelRdt\" is not supported by gpulet"},
      {"containerEdits:\n  netDevices: []\n", "not supported by gpulet"},
      {"devices:\n- name: 0\n", "devices[0].name: want a string, got number"},
      {"devices: {}\n", "devices: want a list, got object"},
      {"containerEdits:\n  deviceNodes:\n  - {path: /d, major: x}\n",
       "deviceNodes[0].major: want an integer, got string"},
      {"containerEdits:\n  deviceNodes:\n  - {path: /d, uid: -1}\n",
       "uid: integer -1 out of range"},
      {"containerEdits:\n  hooks:\n  - {hookName: a, path: /b, args: [1]}\n",
       "hooks[0].args[0]: want a string"},
      {"containerEdits:\n  additionalGids: [x]\n",
       "additionalGids[0].gid: want an integer"},
      {"annotations: {a: 1}\n", "annotations.a: want a string"},
      {"- a\n- b\n", "(top level): want an object, got array"},
      {"", "empty spec"},
      {"kind: a\nkind: b\n", "duplicate key \"kind\""},
      {"{\"kind\": \"a\", \"kind\": \"b\"}", "duplicate key \"kind\""},
      {"{\"kind\": ", "invalid JSON"},
      {"kind: [\n", "t:"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Spec> spec = ParseSpec(c.text, "t");
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(c.error))
        << c.text;
  }
}

TEST(SpecCodecTest, ParsesFormatNames) {
  EXPECT_EQ(ParseFormat("YAML").value(), Format::kYaml);
  EXPECT_EQ(ParseFormat("yml").value(), Format::kYaml);
  EXPECT_EQ(ParseFormat("json").value(), Format::kJson);
  EXPECT_FALSE(ParseFormat("toml").ok());
  EXPECT_STREQ(FormatExtension(Format::kJson), ".json");
}

}  // namespace
}  // namespace gpulet::cdi
