// docs/configuration.md must name every flag, alias, environment variable
// and config key of FlagTable(), and its YAML examples must be valid
// configurations, so the page cannot drift from the code.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"
#include "src/base/config/flag_table.h"
#include "src/base/config/parser.h"
#include "src/base/config/resolve.h"

namespace gpulet::config {
namespace {

std::string ReadDocs() {
  absl::StatusOr<std::string> text = common::ReadFile(
      std::string(GPULET_SOURCE_DIR) + "/docs/configuration.md");
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

// The fenced ```yaml blocks of a markdown text.
std::vector<std::string> YamlBlocks(const std::string& text) {
  std::vector<std::string> blocks;
  const std::string open = "```yaml\n";
  for (size_t start = text.find(open); start != std::string::npos;
       start = text.find(open, start)) {
    start += open.size();
    size_t end = text.find("```", start);
    if (end == std::string::npos) break;
    blocks.push_back(text.substr(start, end - start));
    start = end + 3;
  }
  return blocks;
}

TEST(DocsTest, NamesEveryFlagVariableAndKey) {
  const std::string docs = ReadDocs();
  for (const FlagSpec& spec : FlagTable()) {
    EXPECT_TRUE(absl::StrContains(docs, "`--" + spec.name + "`"))
        << "--" << spec.name;
    for (const std::string& alias : spec.aliases) {
      EXPECT_TRUE(absl::StrContains(docs, "`--" + alias + "`")) << alias;
    }
    for (const std::string& var : spec.env_vars) {
      EXPECT_TRUE(absl::StrContains(docs, "`" + var + "`")) << var;
    }
    if (!spec.config_key.empty()) {
      EXPECT_TRUE(absl::StrContains(docs, "`" + spec.config_key + "`"))
          << spec.config_key;
    }
  }
}

TEST(DocsTest, YamlExamplesAreValidConfigurations) {
  std::vector<std::string> blocks = YamlBlocks(ReadDocs());
  ASSERT_GE(blocks.size(), 2u);
  for (const std::string& block : blocks) {
    absl::StatusOr<Config> file = ParseConfig(block, "configuration.md");
    ASSERT_TRUE(file.ok()) << file.status() << "\n" << block;
    absl::StatusOr<Config> resolved = Resolve(
        {}, [](const std::string&) { return std::nullopt; }, *file);
    EXPECT_TRUE(resolved.ok()) << resolved.status() << "\n" << block;
  }
}

}  // namespace
}  // namespace gpulet::config
