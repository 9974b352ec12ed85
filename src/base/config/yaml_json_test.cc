#include "src/base/config/yaml_json.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::config {
namespace {

using Json = nlohmann::ordered_json;
using ::testing::HasSubstr;

Json MustParse(const std::string& text) {
  absl::StatusOr<Json> value = YamlToJson(text, "t.yaml");
  EXPECT_TRUE(value.ok()) << value.status();
  return value.ok() ? *value : Json();
}

TEST(YamlToJsonTest, ResolvesScalarsLikeTheCoreSchema) {
  struct Case {
    const char* yaml;
    Json want;
  };
  const Case cases[] = {
      {"v: 195", Json{{"v", 195}}},
      {"v: -3", Json{{"v", -3}}},
      {"v: 0x1F", Json{{"v", 31}}},
      {"v: 0o17", Json{{"v", 15}}},
      {"v: 18446744073709551615", Json{{"v", 18446744073709551615ull}}},
      {"v: 1.5", Json{{"v", 1.5}}},
      {"v: true", Json{{"v", true}}},
      {"v: False", Json{{"v", false}}},
      {"v: yes", Json{{"v", "yes"}}},  // YAML 1.1 boolean, a string in 1.2
      {"v: ~", Json{{"v", nullptr}}},
      {"v:", Json{{"v", nullptr}}},
      {"v: \"195\"", Json{{"v", "195"}}},
      {"v: '0:1'", Json{{"v", "0:1"}}},
      {"v: !!str 12", Json{{"v", "12"}}},
      {"v: 0.5.0", Json{{"v", "0.5.0"}}},
      {"v: 0:1", Json{{"v", "0:1"}}},
      {"v: GPU-1a2b", Json{{"v", "GPU-1a2b"}}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(MustParse(c.yaml), c.want) << c.yaml;
  }
}

TEST(YamlToJsonTest, KeepsKeyOrderAndStructure) {
  Json value = MustParse(
      "kind: a/b\ncdiVersion: 0.5.0\ndevices:\n- name: x\n  env: [A=1]\n"
      "empty: {}\nlist: []\n");
  EXPECT_EQ(value.dump(),
            R"({"kind":"a/b","cdiVersion":"0.5.0","devices":[{"name":"x",)"
            R"("env":["A=1"]}],"empty":{},"list":[]})");
}

TEST(YamlToJsonTest, AcceptsJson) {
  EXPECT_EQ(MustParse(R"({"a": [1, "2", null, {"b": false}]})"),
            Json::parse(R"({"a": [1, "2", null, {"b": false}]})"));
}

TEST(YamlToJsonTest, RejectsBadInput) {
  struct Case {
    const char* yaml;
    const char* error;
  };
  const Case cases[] = {
      {"a: 1\na: 2\n", "t.yaml:2:1: duplicate key \"a\""},
      {"a: [1, 2\n", "t.yaml:"},
      {"? [1]\n: 2\n", "map key is not a scalar"},
      {"v: 99999999999999999999999", "integer out of range"},
      {"v: -9223372036854775809", "integer out of range"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Json> value = YamlToJson(c.yaml, "t.yaml");
    ASSERT_FALSE(value.ok()) << c.yaml;
    EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(value.status().message()), HasSubstr(c.error))
        << c.yaml;
  }
}

TEST(YamlToJsonTest, RejectsDeepNesting) {
  std::string deep(200, '[');
  deep += std::string(200, ']');
  EXPECT_FALSE(YamlToJson(deep, "deep").ok());
}

TEST(YamlToJsonTest, RejectsAliasBombs) {
  std::string yaml = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'h'; ++c) {
    yaml += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) yaml += std::string(i ? ", *" : "*") + prev;
    yaml += "]\n";
    prev = c;
  }
  absl::StatusOr<Json> value = YamlToJson(yaml, "bomb");
  ASSERT_FALSE(value.ok());
  EXPECT_THAT(std::string(value.status().message()), HasSubstr("too large"));
}

TEST(JsonToYamlTest, RoundTripsAwkwardStrings) {
  Json value = {
      {"strings",
       {"0", "0:1", "1.5", "true", "null", "", "~", "-x", "a: b", "#c",
        "multi\nline", "GPU-abc", "  pad", "0x10", ".inf"}},
      {"numbers", {0, -1, 195, 18446744073709551615ull}},
      {"bools", {true, false}},
      {"null", nullptr},
      {"empty", Json::object()},
      {"none", Json::array()},
      {"nested", {{{"a", {{"b", Json::array({"c"})}}}}}},
      {"123", "key that looks like a number"},
  };
  std::string yaml = JsonToYaml(value);
  EXPECT_EQ(MustParse(yaml), value) << yaml;
}

TEST(JsonToYamlTest, WritesBlockStyle) {
  Json value =
      Json::parse(R"({"kind":"nvidia.com/gpu","devices":[{"name":"0"}]})");
  EXPECT_EQ(JsonToYaml(value),
            "kind: nvidia.com/gpu\ndevices:\n  - name: \"0\"\n");
}

}  // namespace
}  // namespace gpulet::config
