// Flag > environment > file > default, for booleans, strings and lists, and
// the rules around it (aliases, unset values, origins in errors).
#include "src/base/config/resolve.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"
#include "src/base/config/flag_table.h"
#include "src/base/config/parser.h"

namespace gpulet::config {
namespace {

using ::testing::ElementsAre;

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](
             const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Config File(const std::string& yaml) {
  absl::StatusOr<Config> c = ParseConfig(yaml, "f.yaml");
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : Config{};
}

// One row: what each source says (nullopt: it says nothing) and the value
// that must win.
struct Row {
  const char* name;
  std::optional<std::string> flag, env, file;
  std::string want;
};

// A flag other than the one under test, so "the CLI gave flags, but not
// this one" is covered in every row.
const FlagValues kUnrelatedFlag = {{"pass-device-specs", {"true"}}};

template <typename Read>
void RunRows(const std::string& flag, const std::string& var,
             const std::string& file_key_yaml, const std::vector<Row>& rows,
             Read read) {
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    FlagValues cli = kUnrelatedFlag;
    if (row.flag) cli[flag] = {*row.flag};
    std::map<std::string, std::string> env;
    if (row.env) env[var] = *row.env;
    std::optional<Config> file;
    if (row.file) file = File(file_key_yaml + *row.file + "\n");
    absl::StatusOr<Config> c = Resolve(cli, Env(env), file);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(read(*c), row.want);
  }
}

std::vector<Row> PrecedenceRows(const std::string& dflt, const std::string& f,
                                const std::string& e, const std::string& l) {
  return {
      {"default", std::nullopt, std::nullopt, std::nullopt, dflt},
      {"file", std::nullopt, std::nullopt, f, f},
      {"env beats file", std::nullopt, e, f, e},
      {"env beats default", std::nullopt, e, std::nullopt, e},
      {"flag beats env and file", l, e, f, l},
      {"flag beats file", l, std::nullopt, f, l},
      {"flag beats default", l, std::nullopt, std::nullopt, l},
      {"empty env is unset", std::nullopt, "", f, f},
  };
}

TEST(ResolveTest, BoolPrecedence) {
  RunRows(
      "gds-enabled", "GDS_ENABLED", "flags:\n  gdsEnabled: ",
      PrecedenceRows("false", "true", "false", "true"),
      [](const Config& c) { return c.flags.gds_enabled ? "true" : "false"; });
  // Default true, so every source says false at some point.
  RunRows(
      "fail-on-init-error", "FAIL_ON_INIT_ERROR", "flags:\n  failOnInitError: ",
      PrecedenceRows("true", "false", "true", "false"), [](const Config& c) {
        return c.flags.fail_on_init_error ? "true" : "false";
      });
}

TEST(ResolveTest, StringPrecedence) {
  RunRows("mig-strategy", "MIG_STRATEGY", "flags:\n  migStrategy: ",
          PrecedenceRows("none", "single", "mixed", "none"),
          [](const Config& c) { return ToString(c.flags.mig_strategy); });
  RunRows("mps-root", "MPS_ROOT",
          "flags:\n  mpsRoot: ", PrecedenceRows("", "/file", "/env", "/flag"),
          [](const Config& c) { return c.flags.mps_root; });
}

TEST(ResolveTest, MetricsAddressPrecedence) {
  RunRows("metrics-address", "METRICS_ADDRESS", "metrics:\n  address: ",
          PrecedenceRows("", "127.0.0.1:9400", ":9401", "[::1]:0"),
          [](const Config& c) { return c.metrics.address; });
  absl::StatusOr<Config> bad =
      Resolve({}, Env({{"METRICS_ADDRESS", "9400"}}), std::nullopt);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(bad.status().message()),
            "environment variable METRICS_ADDRESS: metrics.address: \"9400\" "
            "is not host:port with a port in [0, 65535] (e.g. \":9400\", "
            "\"127.0.0.1:9400\", \"[::1]:9400\")");
}

TEST(ResolveTest, MetricsTlsFlags) {
  absl::StatusOr<Config> both =
      Resolve({{"metrics-tls-cert-file", {"/c.pem"}},
               {"metrics-tls-key-file", {"/k.pem"}},
               {"metrics-client-ca-file", {"/ca.pem"}}},
              Env({}), std::nullopt);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->metrics.tls_cert_file, "/c.pem");
  EXPECT_EQ(both->metrics.tls_key_file, "/k.pem");
  EXPECT_EQ(both->metrics.client_ca_file, "/ca.pem");
  absl::StatusOr<Config> alone =
      Resolve({{"metrics-tls-cert-file", {"/c.pem"}}}, Env({}), std::nullopt);
  ASSERT_FALSE(alone.ok());
  EXPECT_THAT(std::string(alone.status().message()),
              ::testing::AllOf(::testing::HasSubstr("--metrics-tls-cert-file"),
                               ::testing::HasSubstr("--metrics-tls-key-file")));
}

TEST(ResolveTest, ListPrecedence) {
  auto strategies = [](const Config& c) {
    std::string out;
    for (DeviceListStrategy s : c.flags.plugin.device_list_strategy) {
      if (!out.empty()) out += ",";
      out += ToString(s);
    }
    return out;
  };
  RunRows("device-list-strategy", "DEVICE_LIST_STRATEGY",
          "flags:\n  plugin:\n    deviceListStrategy: ",
          {{"default", std::nullopt, std::nullopt, std::nullopt, "envvar"},
           {"file list", std::nullopt, std::nullopt,
            "[cdi-annotations, cdi-cri]", "cdi-annotations,cdi-cri"},
           {"env beats file", std::nullopt, "volume-mounts, envvar",
            "[cdi-cri]", "volume-mounts,envvar"},
           {"flag beats env and file", "cdi-cri,envvar", "volume-mounts",
            "[cdi-annotations]", "cdi-cri,envvar"},
           {"flag beats file", "envvar", std::nullopt, "cdi-cri", "envvar"}},
          strategies);
}

TEST(ResolveTest, RepeatedListFlagAccumulates) {
  absl::StatusOr<Config> c =
      Resolve({{"device-list-strategy", {"envvar", "cdi-cri,cdi-annotations"}}},
              Env({}), std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(
      c->flags.plugin.device_list_strategy,
      ElementsAre(DeviceListStrategy::kEnvvar, DeviceListStrategy::kCdiCri,
                  DeviceListStrategy::kCdiAnnotations));
}

TEST(ResolveTest, UnsetFlagDoesNotOverrideFile) {
  Config file = File(
      "flags:\n  migStrategy: mixed\n  failOnInitError: false\n"
      "  plugin:\n    deviceListStrategy: cdi-cri\n");
  absl::StatusOr<Config> c = Resolve({{"gds-enabled", {""}}}, Env({}), file);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->flags.mig_strategy, MigStrategy::kMixed);
  EXPECT_FALSE(c->flags.fail_on_init_error);
  EXPECT_THAT(c->flags.plugin.device_list_strategy,
              ElementsAre(DeviceListStrategy::kCdiCri));
  EXPECT_TRUE(c->flags.gds_enabled);  // a bare boolean flag means true
}

TEST(ResolveTest, AliasesAndSecondVariables) {
  absl::StatusOr<Config> c =
      Resolve({{"nvidia-driver-root", {"/run/nvidia/driver"}}},
              Env({{"NVIDIA_CTK_PATH", "/opt/ctk"},
                   {"CONTAINER_DRIVER_ROOT", "/second"},
                   {"DRIVER_ROOT_CTR_PATH", "/first"}}),
              std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->flags.nvidia_driver_root, "/run/nvidia/driver");
  EXPECT_EQ(c->flags.plugin.nvidia_ctk_path, "/opt/ctk");
  EXPECT_EQ(c->flags.plugin.container_driver_root, "/first");
  EXPECT_EQ(c->origins.at("flags.nvidiaDriverRoot").source,
            "flag --nvidia-driver-root");
}

TEST(ResolveTest, DevRootDefaultsToDriverRoot) {
  absl::StatusOr<Config> c = Resolve(
      {}, Env({{"NVIDIA_DRIVER_ROOT", "/run/nvidia/driver"}}), std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->flags.nvidia_dev_root, "/run/nvidia/driver");
  c = Resolve({{"dev-root", {"/"}}},
              Env({{"NVIDIA_DRIVER_ROOT", "/run/nvidia/driver"}}),
              std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->flags.nvidia_dev_root, "/");
}

TEST(ResolveTest, ErrorsNameTheirSource) {
  auto error = [](const FlagValues& cli, std::map<std::string, std::string> env,
                  std::optional<Config> file = std::nullopt) {
    return std::string(
        Resolve(cli, Env(std::move(env)), file).status().message());
  };
  EXPECT_EQ(error({{"device-id-strategy", {"serial"}}}, {}),
            "flag --device-id-strategy: flags.plugin.deviceIDStrategy: "
            "unknown value \"serial\" (expected one of: uuid, index)");
  EXPECT_EQ(error({}, {{"GDS_ENABLED", "sure"}}),
            "environment variable GDS_ENABLED: flags.gdsEnabled: expected "
            "true or false, got \"sure\"");
  EXPECT_EQ(error({}, {{"IMEX_CHANNEL_IDS", "0,x"}}),
            "environment variable IMEX_CHANNEL_IDS: imex.channelIDs: "
            "expected an integer, got \"x\"");
  EXPECT_EQ(error({{"cdi-annotation-prefix", {"cdi"}}}, {}),
            "flag --cdi-annotation-prefix: flags.plugin.cdiAnnotationPrefix: "
            "\"cdi\" is not a CDI annotation prefix: it needs a DNS subdomain "
            "followed by '/', such as cdi.k8s.io/");
  EXPECT_EQ(error({{"device-list-strategy", {""}}}, {}),
            "flag --device-list-strategy: flags.plugin.deviceListStrategy: no "
            "device list strategy specified; at least one of envvar, "
            "volume-mounts, cdi-annotations, cdi-cri is required");
  EXPECT_EQ(error({{"mig-stratgy", {"none"}}}, {}),
            "unknown flag --mig-stratgy");
  EXPECT_EQ(
      error({{"driver-root", {"/a"}}, {"nvidia-driver-root", {"/b"}}}, {}),
      "flag --driver-root and its alias --nvidia-driver-root were both "
      "given; use one");
  // The cross-field rule blames the value that came last.
  EXPECT_EQ(error({}, {{"MIG_STRATEGY", "mixed"}, {"MPS_ROOT", "/mps"}},
                  File("sharing:\n  mps:\n    resources: [{name: gpu, "
                       "replicas: 2}]\n")),
            "environment variable MIG_STRATEGY: flags.migStrategy: mixed is "
            "not supported together with sharing.mps");
}

TEST(ResolveTest, FlagHidesABadVariable) {
  absl::StatusOr<Config> c =
      Resolve({{"mig-strategy", {"single"}}}, Env({{"MIG_STRATEGY", "bogus"}}),
              std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->flags.mig_strategy, MigStrategy::kSingle);
}

TEST(ResolveTest, MpsRootFromEnvironmentCompletesTheFile) {
  Config file = File(
      "sharing:\n  mps:\n    resources: [{name: gpu, "
      "replicas: 2}]\n");
  EXPECT_FALSE(Resolve({}, Env({}), file).ok());
  EXPECT_TRUE(Resolve({}, Env({{"MPS_ROOT", "/run/nvidia/mps"}}), file).ok());
}

TEST(ResolveTest, ListFlagReplacesTheFilesItemOrigins) {
  Config file = File("flags:\n  plugin:\n    deviceListStrategy: [envvar]\n");
  ASSERT_TRUE(file.origins.contains("flags.plugin.deviceListStrategy[0]"));
  absl::StatusOr<Config> c =
      Resolve({{"device-list-strategy", {"cdi-cri"}}}, Env({}), file);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->origins.contains("flags.plugin.deviceListStrategy[0]"));
  EXPECT_EQ(c->origins.at("flags.plugin.deviceListStrategy").source,
            "flag --device-list-strategy");
}

TEST(ResolveTest, ConfigFilePath) {
  EXPECT_EQ(ConfigFilePath({}, Env({})), std::nullopt);
  EXPECT_EQ(ConfigFilePath({}, Env({{"CONFIG_FILE", "/e.yaml"}})), "/e.yaml");
  EXPECT_EQ(ConfigFilePath({{"config-file", {"/f.yaml"}}},
                           Env({{"CONFIG_FILE", "/e.yaml"}})),
            "/f.yaml");
  EXPECT_EQ(ConfigFilePath({{"config-file", {""}}},
                           Env({{"CONFIG_FILE", "/e.yaml"}})),
            std::nullopt);
}

TEST(ResolveTest, LoadAndResolveReadsTheFile) {
  char dir_template[] = "/tmp/gpulet-cfg-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string path = std::string(dir_template) + "/c.yaml";
  ASSERT_TRUE(common::WriteFileAtomic(
                  path, "flags:\n  migStrategy: single\n  gdsEnabled: true\n")
                  .ok());
  absl::StatusOr<Config> c = LoadAndResolve({{"gds-enabled", {"false"}}},
                                            Env({{"CONFIG_FILE", path}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->flags.mig_strategy, MigStrategy::kSingle);
  EXPECT_FALSE(c->flags.gds_enabled);
  EXPECT_EQ(c->origins.at("flags.migStrategy").source, path);
  std::remove(path.c_str());
  rmdir(dir_template);
}

// Each flag given its documented default resolves to the built-in default:
// the table's defaults, the bindings and Config{} agree.
TEST(FlagTableTest, DocumentedDefaultsAreTheDefaults) {
  absl::StatusOr<Config> defaults = Resolve({}, Env({}), std::nullopt);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  for (const FlagSpec& spec : FlagTable()) {
    if (!spec.apply || spec.default_value == "the driver root") continue;
    SCOPED_TRACE(spec.name);
    absl::StatusOr<Config> c =
        Resolve({{spec.name, {spec.default_value}}}, Env({}), std::nullopt);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->flags, defaults->flags);
    EXPECT_EQ(c->imex, defaults->imex);
  }
}

// Every config key in the table is a key the file parser knows.
TEST(FlagTableTest, ConfigKeysAreFileKeys) {
  for (const FlagSpec& spec : FlagTable()) {
    if (spec.config_key.empty()) continue;
    SCOPED_TRACE(spec.config_key);
    std::string yaml;
    std::string indent;
    std::string key = spec.config_key;
    for (size_t dot; (dot = key.find('.')) != std::string::npos;) {
      yaml += indent + key.substr(0, dot) + ":\n";
      indent += "  ";
      key = key.substr(dot + 1);
    }
    std::string value = spec.kind == FlagKind::kBool ? "true" : "/x";
    if (spec.kind == FlagKind::kList) value = "[]";
    if (spec.config_key == "flags.plugin.cdiAnnotationPrefix") value = "a.b/";
    if (spec.config_key == "flags.plugin.deviceListStrategy")
      value = "[cdi-cri]";
    if (spec.config_key == "metrics.address") value = "\":9400\"";
    // The TLS files of the metrics server are valid only with their peers.
    std::string peers;
    if (spec.config_key == "metrics.tlsCertFile") {
      peers = indent + "tlsKeyFile: /k\n";
    } else if (spec.config_key == "metrics.tlsKeyFile") {
      peers = indent + "tlsCertFile: /c\n";
    } else if (spec.config_key == "metrics.clientCAFile") {
      peers = indent + "tlsCertFile: /c\n" + indent + "tlsKeyFile: /k\n";
    }
    absl::StatusOr<Config> c = ParseConfig(
        yaml + peers + indent + key + ": " + value + "\n", "k.yaml");
    if (!c.ok()) {
      // Enum-valued keys refuse "/x" but must name the key itself.
      EXPECT_THAT(std::string(c.status().message()),
                  ::testing::HasSubstr(spec.config_key + ": unknown value"));
      continue;
    }
    EXPECT_TRUE(c->origins.contains(spec.config_key));
  }
}

TEST(FlagTableTest, NamesAreUnique) {
  std::map<std::string, int> seen;
  for (const FlagSpec& spec : FlagTable()) {
    ++seen[spec.name];
    for (const std::string& alias : spec.aliases) ++seen[alias];
    for (const std::string& var : spec.env_vars) ++seen[var];
  }
  for (const auto& [name, count] : seen) EXPECT_EQ(count, 1) << name;
}

}  // namespace
}  // namespace gpulet::config
