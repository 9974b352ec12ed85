// Where a parsed TOML file writes its tables and values, and the text
// edits TomlDocument makes at those places. Internal to engineconfig: the
// one header that includes toml11.
//
// toml11 gives every value a region in the source: a [header] table the
// header, an inline table its `{`, a table made by dotted keys its key, a
// scalar or array its own text. TomlLayout turns that into sections (a
// header and the lines up to its last value) and offsets.
//
// Thread safety: a value.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <toml.hpp>
#include <vector>

#include "src/runtime/engineconfig/toml_document.h"

namespace gpulet::engineconfig {

using TomlValue =
    toml::basic_value<toml::discard_comments, std::map, std::vector>;

// The value at `path` under `root`, or nullptr (also when the path goes
// through something that is not a table).
const TomlValue* FindValue(const TomlValue& root, const KeyPath& path);

bool IsArrayOfTables(const TomlValue& v);

enum class TableForm {
  kRoot,
  kHeader,    // written as [path]
  kImplicit,  // only implied by deeper headers ([path.x])
  kInline,    // path = {...}
  kDotted,    // path.x = ... inside another table
};

// A [header] (or [[header]] element) and the lines it owns.
struct TomlSection {
  KeyPath path;
  int line = 0;            // 1-based line of the header
  size_t content_end = 0;  // just past the last line of the header or a value
  std::string header_indent;
  std::string key_indent;  // of its first value; empty when it has none
  bool has_values = false;
};

class TomlLayout {
 public:
  static TomlLayout Build(const std::string& text, const TomlValue& root);

  // Byte offset of a toml11 location in the text.
  size_t Offset(const toml::source_location& loc) const;
  int LineOf(const TomlValue& root, const KeyPath& path) const;
  TableForm FormOf(const TomlValue& table, const KeyPath& path) const;

  // `text` with `line` ("key = value") added: at the end of the root keys,
  // at the end of the [table] section, or (`lines`) in a new [table]
  // section (written as `header`) after the last section of its nearest
  // existing ancestor.
  std::string InsertRootKey(const std::string& text,
                            const std::string& line) const;
  std::string InsertKey(const std::string& text, const KeyPath& table,
                        const std::string& line) const;
  std::string InsertSection(const std::string& text, const KeyPath& table,
                            const std::string& header,
                            const std::vector<std::string>& lines) const;

  int literal_strings = 0;
  int basic_strings = 0;

 private:
  const TomlSection* SectionOf(const KeyPath& path) const;
  std::string Indent(const KeyPath& table) const;

  std::vector<size_t> line_starts_;
  std::vector<TomlSection> sections_;  // in file order
  size_t root_end_ = 0;                // just past the last root value's line
  bool root_has_values_ = false;
  std::string step_;  // key indent minus header indent
};

}  // namespace gpulet::engineconfig
