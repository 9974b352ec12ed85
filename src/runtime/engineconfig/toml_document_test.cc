#include "src/runtime/engineconfig/toml_document.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::engineconfig {
namespace {

using ::testing::HasSubstr;

TomlDocument MustParse(const std::string& text) {
  absl::StatusOr<TomlDocument> doc = TomlDocument::Parse(text, "f.toml");
  EXPECT_TRUE(doc.ok()) << doc.status();
  return std::move(doc).value();
}

// Sets `path` = `value` in `text` and returns the new text.
std::string SetIn(const std::string& text, const KeyPath& path,
                  const std::string& value) {
  TomlDocument doc = MustParse(text);
  absl::StatusOr<bool> changed = doc.Set(path, value);
  EXPECT_TRUE(changed.ok()) << changed.status();
  return doc.text();
}

TEST(TomlDocumentTest, ReplacesOnlyTheValueKeepingItsComment) {
  EXPECT_EQ(SetIn("# top\na = 1 # why\nb = \"x\"\n", {"a"}, "2"),
            "# top\na = 2 # why\nb = \"x\"\n");
}

TEST(TomlDocumentTest, SameValueChangesNothing) {
  TomlDocument doc = MustParse("[t]\n  s = 'x'\n");
  absl::StatusOr<bool> changed = doc.Set({"t", "s"}, "\"x\"");
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(doc.text(), "[t]\n  s = 'x'\n");
}

TEST(TomlDocumentTest, NewKeyGoesAfterTheSectionsLastValueWithItsIndent) {
  EXPECT_EQ(
      SetIn("[t]\n  x = [\n    1,\n  ] # c\n\n# about u\n[u]\n  y = 2\n",
            {"t", "z"}, "3"),
      "[t]\n  x = [\n    1,\n  ] # c\n  z = 3\n\n# about u\n[u]\n  y = 2\n");
}

TEST(TomlDocumentTest, NewTableGoesAfterItsParentsLastSection) {
  EXPECT_EQ(
      SetIn("[a]\nx = 1\n[a.b]\ny = 2\n[c]\nz = 3\n", {"a", "d", "k"}, "true"),
      "[a]\nx = 1\n[a.b]\ny = 2\n\n[a.d]\nk = true\n[c]\nz = 3\n");
}

TEST(TomlDocumentTest, NewTableTakesItsSiblingsIndent) {
  EXPECT_EQ(SetIn("[p]\n  [p.r]\n    [p.r.one]\n      k = 1\n",
                  {"p", "r", "two", "k"}, "2"),
            "[p]\n  [p.r]\n    [p.r.one]\n      k = 1\n\n    [p.r.two]\n      "
            "k = 2\n");
}

TEST(TomlDocumentTest, TableImpliedByDeeperHeadersGetsItsOwnHeader) {
  EXPECT_EQ(SetIn("[a.b]\nx = 1\n", {"a", "y"}, "1"),
            "[a.b]\nx = 1\n\n[a]\ny = 1\n");
}

TEST(TomlDocumentTest, RootKeysGoBeforeTheFirstTable) {
  EXPECT_EQ(SetIn("# file\n\n[t]\nx = 1\n", {"version"}, "2"),
            "version = 2\n\n# file\n\n[t]\nx = 1\n");
  EXPECT_EQ(SetIn("a = 1\n\n[t]\nx = 1\n", {"b"}, "2"),
            "a = 1\nb = 2\n\n[t]\nx = 1\n");
  EXPECT_EQ(SetIn("", {"t", "x"}, "1"), "[t]\nx = 1\n");
}

TEST(TomlDocumentTest, FileWithoutFinalNewline) {
  EXPECT_EQ(SetIn("[t]\nx = 1", {"t", "y"}, "2"), "[t]\nx = 1\ny = 2\n");
  EXPECT_EQ(SetIn("[t]\nx = 1", {"u", "y"}, "2"), "[t]\nx = 1\n\n[u]\ny = 2\n");
}

TEST(TomlDocumentTest, KeysThatNeedQuotesAreQuotedInTheFilesStyle) {
  EXPECT_EQ(SetIn("[p]\n", {"p", "io.x", "k"}, "1"),
            "[p]\n\n[p.\"io.x\"]\nk = 1\n");
  EXPECT_EQ(SetIn("[p]\n  s = 'a'\n", {"p", "io.x", "k"}, "1"),
            "[p]\n  s = 'a'\n\n  [p.'io.x']\n    k = 1\n");
}

TEST(TomlDocumentTest, QuoteFollowsTheFile) {
  EXPECT_EQ(MustParse("a = 'x'\nb = 'y'\n").Quote("c"), "'c'");
  EXPECT_EQ(MustParse("a = 'x'\nb = 'y'\n").Quote("it's"), "\"it's\"");
  EXPECT_EQ(MustParse("a = \"x\"\n").Quote("c\"d"), "\"c\\\"d\"");
  EXPECT_EQ(MustParse("").StringArray({"a", "b"}), "[\"a\", \"b\"]");
}

TEST(TomlDocumentTest, ValueKeysAndSourceTextFollowTheFile) {
  TomlDocument doc = MustParse("[t]\nz = 'a'\na = [ 1, 2 ]\n[t.sub]\nk = 1\n");
  EXPECT_THAT(doc.ValueKeys({"t"}), ::testing::ElementsAre("z", "a"));
  EXPECT_EQ(doc.SourceText({"t", "a"}), "[ 1, 2 ]");
  EXPECT_EQ(doc.SourceText({"t", "z"}), "'a'");
  EXPECT_EQ(doc.LineOf({"t", "sub", "k"}), 5);
}

TEST(TomlDocumentTest, TablesItCannotExtendAreNamed) {
  struct Case {
    std::string text;
    KeyPath path;
    std::string want;
  } cases[] = {
      {"[t]\na.b = 1\n",
       {"t", "a", "c"},
       "f.toml:2: t.a is written with dotted keys"},
      {"t = { a = 1 }\n", {"t", "b"}, "f.toml:1: t is an inline table"},
      {"[[t]]\na = 1\n", {"t", "b"}, "f.toml:1: t is an array of tables"},
      {"t = 'x'\n", {"t", "b"}, "f.toml:1: t is a string, not a table"},
  };
  for (const Case& c : cases) {
    TomlDocument doc = MustParse(c.text);
    absl::StatusOr<bool> changed = doc.Set(c.path, "1");
    EXPECT_EQ(changed.status().code(), absl::StatusCode::kFailedPrecondition)
        << c.text;
    EXPECT_THAT(std::string(changed.status().message()), HasSubstr(c.want))
        << c.text;
    EXPECT_EQ(doc.text(), c.text);
  }
}

TEST(TomlDocumentTest, SettingATableIsAnError) {
  TomlDocument doc = MustParse("[t.u]\nx = 1\n");
  EXPECT_THAT(std::string(doc.Set({"t", "u"}, "1").status().message()),
              HasSubstr("t.u is a table"));
}

TEST(TomlDocumentTest, ParseErrorsNameFileAndLine) {
  for (const auto& [text, want] :
       std::vector<std::pair<std::string, std::string>>{
           {"[t\nx = 1\n", "f.toml:1: invalid TOML"},
           {"a = 1\n\nb = \n", "f.toml:3: invalid TOML"},
           {"a = 1\na = 2\n", "f.toml:2: invalid TOML"},
       }) {
    absl::StatusOr<TomlDocument> doc = TomlDocument::Parse(text, "f.toml");
    ASSERT_FALSE(doc.ok()) << text;
    EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(doc.status().message()), HasSubstr(want)) << text;
  }
}

}  // namespace
}  // namespace gpulet::engineconfig
