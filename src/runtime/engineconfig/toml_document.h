// A TOML configuration file that gpulet edits in place (containerd's
// config.toml, a CRI-O drop-in).
//
// toml11 parses the file: it gives the meaning (the tree of tables and
// values) and where every table header and value sits in the text. An edit
// splices only the text of the value it sets, a line for a new key, or a
// new [table] section, so every other byte — comments, key order,
// indentation, quoting — stays as it was. After each edit the new text is
// parsed again and must equal the old tree with exactly that one value set;
// anything else is an error and the document keeps its previous text.
//
// Thread safety: a value; one thread at a time may edit it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpulet::engineconfig {

// Keys from the root, e.g. {"plugins", "io.containerd.grpc.v1.cri"}.
using KeyPath = std::vector<std::string>;

// Returns `path` with `keys` appended.
KeyPath Join(KeyPath path, std::initializer_list<std::string_view> keys);

// How a TOML value is held at a key path.
enum class TomlKind {
  kMissing,
  kTable,
  kArray,
  kString,
  kInteger,
  kBoolean,
  kOther,
};

class TomlDocument {
 public:
  // Parses `text`. `name` (the file) prefixes every error. Errors:
  // InvalidArgument "<name>:<line>: invalid TOML: <reason>".
  static absl::StatusOr<TomlDocument> Parse(std::string text, std::string name);

  TomlDocument(TomlDocument&&) noexcept;
  TomlDocument& operator=(TomlDocument&&) noexcept;
  ~TomlDocument();

  const std::string& text() const;
  const std::string& name() const;
  // True when the root table has no key (an empty file, or comments only).
  bool Empty() const;

  TomlKind KindAt(const KeyPath& path) const;
  // The value at `path`, or nullopt when it is missing or of another type.
  std::optional<std::string> StringAt(const KeyPath& path) const;
  std::optional<std::int64_t> IntegerAt(const KeyPath& path) const;
  // nullopt also when an element is not a string.
  std::optional<std::vector<std::string>> StringArrayAt(
      const KeyPath& path) const;
  // The 1-based line where the value or table at `path` is written (0 when
  // missing).
  int LineOf(const KeyPath& path) const;
  // The keys of the table at `path` whose values are not tables, in the
  // order the file writes them.
  std::vector<std::string> ValueKeys(const KeyPath& table) const;
  // The value at `path` exactly as the file writes it (REQUIRES: it exists
  // and is not a table).
  std::string SourceText(const KeyPath& path) const;

  // Sets the value at `path` (a key in the table path[0..n-2]) to
  // `value_text`, one TOML value (`"x"`, `true`, `["a", "b"]`). Tables on
  // the way that are missing are added as [table] sections after their
  // nearest existing relatives. Returns false, changing nothing, when the
  // value already equals it (strings compared by content, not quoting).
  // Errors: FailedPrecondition naming the file, line and key when the
  // path goes through a value that is not a table, an array of tables, or
  // a table written inline or with dotted keys (those are not extended);
  // Internal when the edit would not give the intended tree.
  absl::StatusOr<bool> Set(const KeyPath& path, const std::string& value_text);

  // Sets every (key, value text) of `entries` in the table at `table`: a
  // missing table is added whole, as one [table] section in this order
  // (one edit, one check); otherwise as Set() key by key. Returns whether
  // anything changed.
  absl::StatusOr<bool> SetTable(
      const KeyPath& table,
      const std::vector<std::pair<std::string, std::string>>& entries);

  // `s` as a TOML string in the quoting the file mostly uses ('...' for
  // containerd 2.x's own configs, "..." otherwise).
  std::string Quote(std::string_view s) const;
  // `items` as a one-line TOML array of strings.
  std::string StringArray(const std::vector<std::string>& items) const;

 private:
  struct Impl;
  explicit TomlDocument(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// `path` as a TOML dotted key (bare keys where possible, else "quoted").
std::string FormatKeyPath(const KeyPath& path);

}  // namespace gpulet::engineconfig
