#include "src/model/cdi/validate.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::cdi {
namespace {

using ::testing::HasSubstr;

TEST(NameRulesTest, FollowTheReferenceParser) {
  for (const char* good : {"nvidia.com", "a", "x1", "a_b-c.d"}) {
    EXPECT_TRUE(ValidateVendorName(good).ok()) << good;
    EXPECT_TRUE(ValidateClassName(good).ok()) << good;
  }
  for (const char* bad : {"", "1abc", "-a", "a-", "a/b", "a=b", "a b"}) {
    EXPECT_FALSE(ValidateVendorName(bad).ok()) << bad;
  }
  for (const char* good : {"0", "0:1", "all", "GPU-8a3b-c", "MIG-x", "a.b_c"}) {
    EXPECT_TRUE(ValidateDeviceName(good).ok()) << good;
  }
  for (const char* bad : {"", ":0", "0:", "a/b", "a=b", "a b", "gpu*"}) {
    EXPECT_FALSE(ValidateDeviceName(bad).ok()) << bad;
  }
  EXPECT_THAT(std::string(ValidateDeviceName("a*b").message()),
              HasSubstr("invalid character '*'"));
}

TEST(QualifiedNameTest, SplitsAndChecks) {
  EXPECT_EQ(QualifiedName("nvidia.com", "gpu", "0:1"), "nvidia.com/gpu=0:1");
  absl::StatusOr<ParsedName> parsed = ParseQualifiedName("nvidia.com/gpu=0:1");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->vendor, "nvidia.com");
  EXPECT_EQ(parsed->cls, "gpu");
  EXPECT_EQ(parsed->name, "0:1");
  for (const char* bad : {"gpu=0", "nvidia.com/gpu", "nvidia.com/gpu=", "=0",
                          "nvidia.com=gpu/0", "1v/gpu=0"}) {
    EXPECT_FALSE(ParseQualifiedName(bad).ok()) << bad;
  }
}

Spec Minimal() {
  Spec spec;
  spec.cdi_version = "0.3.0";
  spec.kind = "vendor.com/device";
  Device device;
  device.name = "dev";
  device.edits.env = {"A=1"};
  spec.devices.push_back(device);
  return spec;
}

TEST(MinimumVersionTest, Table) {
  struct Case {
    const char* name;
    void (*edit)(Spec&);
    const char* want;
  };
  const Case cases[] = {
      {"plain", [](Spec&) {}, "0.3.0"},
      {"mount type",
       [](Spec& s) {
         s.edits.mounts.push_back({"/a", "/b", "bind", {}});
       },
       "0.4.0"},
      {"digit name", [](Spec& s) { s.devices[0].name = "0"; }, "0.5.0"},
      {"host path on device",
       [](Spec& s) {
         s.devices[0].edits.device_nodes.push_back(
             {.path = "/dev/x", .host_path = "/h/dev/x"});
       },
       "0.5.0"},
      {"host path in spec edits",
       [](Spec& s) {
         s.edits.device_nodes.push_back({.path = "/dev/x", .host_path = "/h"});
       },
       "0.5.0"},
      {"spec annotation", [](Spec& s) { s.annotations["a"] = "b"; }, "0.6.0"},
      {"device annotation",
       [](Spec& s) { s.devices[0].annotations["a"] = "b"; }, "0.6.0"},
      {"dot in class", [](Spec& s) { s.kind = "vendor.com/dev.ice"; }, "0.6.0"},
      {"additional gids",
       [](Spec& s) { s.devices[0].edits.additional_gids = {44}; }, "0.7.0"},
      {"gids beat digits",
       [](Spec& s) {
         s.devices[0].name = "0";
         s.edits.additional_gids = {44};
       },
       "0.7.0"},
  };
  for (const Case& c : cases) {
    Spec spec = Minimal();
    c.edit(spec);
    EXPECT_EQ(MinimumVersion(spec), c.want) << c.name;
  }
}

TEST(ValidateTest, AcceptsAMinimalSpec) {
  EXPECT_TRUE(Validate(Minimal()).ok());
  Spec v = Minimal();
  v.cdi_version = "v1.1.0";
  EXPECT_TRUE(Validate(v).ok());
}

TEST(ValidateTest, Table) {
  struct Case {
    const char* name;
    void (*edit)(Spec&);
    const char* error;
  };
  const Case cases[] = {
      {"unknown version", [](Spec& s) { s.cdi_version = "0.9.0"; },
       "not a known CDI version"},
      {"version too old",
       [](Spec& s) {
         s.devices[0].name = "0";
         s.cdi_version = "0.4.0";
       },
       "need at least 0.5.0"},
      {"kind without class", [](Spec& s) { s.kind = "vendor.com"; },
       "vendor/class"},
      {"bad vendor", [](Spec& s) { s.kind = "1v/device"; }, "kind: vendor"},
      {"bad class", [](Spec& s) { s.kind = "v/dev*"; }, "kind: class"},
      {"no devices", [](Spec& s) { s.devices.clear(); }, "no devices"},
      {"bad device name", [](Spec& s) { s.devices[0].name = "a b"; },
       "device name \"a b\""},
      {"duplicate device", [](Spec& s) { s.devices.push_back(s.devices[0]); },
       "defined twice"},
      {"empty edits", [](Spec& s) { s.devices[0].edits = {}; },
       "empty containerEdits"},
      {"bad env", [](Spec& s) { s.devices[0].edits.env = {"=x"}; },
       "invalid environment variable \"=x\""},
      {"node without path", [](Spec& s) { s.edits.device_nodes.push_back({}); },
       "empty path"},
      {"bad node type",
       [](Spec& s) {
         s.edits.device_nodes.push_back({.path = "/d", .type = "x"});
       },
       "invalid type \"x\""},
      {"bad permissions",
       [](Spec& s) {
         s.edits.device_nodes.push_back({.path = "/d", .permissions = "rwx"});
       },
       "invalid permissions \"rwx\""},
      {"bad hook name",
       [](Spec& s) {
         s.edits.hooks.push_back({.hook_name = "x", .path = "/h"});
       },
       "invalid hook name \"x\""},
      {"hook without path",
       [](Spec& s) { s.edits.hooks.push_back({.hook_name = "poststop"}); },
       "empty path"},
      {"bad hook env",
       [](Spec& s) {
         s.edits.hooks.push_back(
             {.hook_name = "poststop", .path = "/h", .env = {"X"}});
       },
       "invalid environment variable \"X\""},
      {"mount without path",
       [](Spec& s) { s.edits.mounts.push_back({.host_path = "/a"}); },
       "empty path"},
  };
  for (const Case& c : cases) {
    Spec spec = Minimal();
    c.edit(spec);
    absl::Status status = Validate(spec);
    ASSERT_FALSE(status.ok()) << c.name;
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.error)) << c.name;
  }
}

TEST(CompareVersionsTest, OrdersKnownVersions) {
  EXPECT_LT(CompareVersions("0.5.0", "0.6.0"), 0);
  EXPECT_GT(CompareVersions("1.0.0", "0.8.0"), 0);
  EXPECT_EQ(CompareVersions("v0.5.0", "0.5.0"), 0);
  EXPECT_LT(CompareVersions("9.9.9", "0.1.0"), 0);
}

}  // namespace
}  // namespace gpulet::cdi
