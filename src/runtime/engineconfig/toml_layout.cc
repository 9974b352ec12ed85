#include "src/runtime/engineconfig/toml_layout.h"

#include <algorithm>
#include <utility>

namespace gpulet::engineconfig {
namespace {

struct Owner {
  KeyPath path;
  size_t depth = 0;
};

struct Span {
  size_t begin = 0;
  size_t end = 0;
  int line = 0;
};

// What one walk over the tree finds: the table owning each header line (the
// deepest table whose region is that header: a header also stands as the
// region of the tables it implies) and the text of every value.
struct Found {
  std::map<int, Owner> owners;
  std::vector<Span> spans;
  int literal = 0;
  int basic = 0;
};

char Lead(const std::string& text, size_t offset) {
  return offset < text.size() ? text[offset] : '\0';
}

size_t EndOfLine(const std::string& text, size_t pos) {
  size_t nl = text.find('\n', pos);
  return nl == std::string::npos ? text.size() : nl + 1;
}

std::string IndentOf(const std::string& text, size_t line_start) {
  size_t end = text.find_first_not_of(" \t", line_start);
  if (end == std::string::npos) end = text.size();
  return text.substr(line_start, end - line_start);
}

void CountStrings(const TomlValue& v, Found& out) {
  if (v.is_string()) {
    ++(v.as_string().kind == toml::string_t::literal ? out.literal : out.basic);
  } else if (v.is_array()) {
    for (const TomlValue& e : v.as_array()) CountStrings(e, out);
  } else if (v.is_table()) {
    for (const auto& [key, e] : v.as_table()) CountStrings(e, out);
  }
}

class Walker {
 public:
  Walker(const TomlLayout& layout, const std::string& text)
      : layout_(layout), text_(text) {}

  void Table(const TomlValue& table, KeyPath& path) {
    for (const auto& [key, v] : table.as_table()) {
      path.push_back(key);
      Visit(v, path, false);
      path.pop_back();
    }
  }

  Found found;

 private:
  void Visit(const TomlValue& v, KeyPath& path, bool element) {
    toml::source_location loc = v.location();
    size_t begin = layout_.Offset(loc);
    char lead = Lead(text_, begin);
    if (v.is_table() && lead != '{') {
      if (lead == '[') {
        Owner owner{path, path.size() + (element ? 1 : 0)};
        auto [it, fresh] =
            found.owners.try_emplace(static_cast<int>(loc.line()), owner);
        if (!fresh && it->second.depth < owner.depth) it->second = owner;
      }
      Table(v, path);
      return;
    }
    if (IsArrayOfTables(v) &&
        Lead(text_, layout_.Offset(v.as_array().front().location())) == '[') {
      for (const TomlValue& e : v.as_array()) Visit(e, path, true);
      return;
    }
    found.spans.push_back(
        {begin, begin + loc.region(), static_cast<int>(loc.line())});
    CountStrings(v, found);
  }

  const TomlLayout& layout_;
  const std::string& text_;
};

bool StartsWith(const KeyPath& path, const KeyPath& prefix, size_t n) {
  return path.size() >= n &&
         std::equal(prefix.begin(), prefix.begin() + n, path.begin());
}

// Text to insert at `pos`, so that it starts on a line of its own.
std::string Splice(const std::string& text, size_t pos, std::string insert) {
  if (pos == text.size() && !text.empty() && text.back() != '\n') {
    insert.insert(0, "\n");
  }
  std::string out = text;
  out.insert(pos, insert);
  return out;
}

}  // namespace

const TomlValue* FindValue(const TomlValue& root, const KeyPath& path) {
  const TomlValue* cur = &root;
  for (const std::string& key : path) {
    if (!cur->is_table()) return nullptr;
    const auto& tab = cur->as_table();
    auto it = tab.find(key);
    if (it == tab.end()) return nullptr;
    cur = &it->second;
  }
  return cur;
}

bool IsArrayOfTables(const TomlValue& v) {
  if (!v.is_array() || v.as_array().empty()) return false;
  const auto& a = v.as_array();
  return std::all_of(a.begin(), a.end(),
                     [](const TomlValue& e) { return e.is_table(); });
}

TomlLayout TomlLayout::Build(const std::string& text, const TomlValue& root) {
  TomlLayout layout;
  layout.line_starts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') layout.line_starts_.push_back(i + 1);
  }
  Walker walker(layout, text);
  KeyPath path;
  walker.Table(root, path);
  Found& found = walker.found;
  layout.literal_strings = found.literal;
  layout.basic_strings = found.basic;

  for (auto& [line, owner] : found.owners) {
    TomlSection s;
    s.path = std::move(owner.path);
    s.line = line;
    size_t start = layout.line_starts_[static_cast<size_t>(line) - 1];
    s.content_end = EndOfLine(text, start);
    s.header_indent = IndentOf(text, start);
    layout.sections_.push_back(std::move(s));
  }
  std::sort(found.spans.begin(), found.spans.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (const Span& span : found.spans) {
    auto after = std::lower_bound(
        layout.sections_.begin(), layout.sections_.end(), span.line,
        [](const TomlSection& s, int line) { return s.line < line; });
    size_t end = EndOfLine(text, span.end);
    if (after == layout.sections_.begin()) {
      layout.root_end_ = std::max(layout.root_end_, end);
      layout.root_has_values_ = true;
      continue;
    }
    TomlSection& s = *(after - 1);
    s.content_end = std::max(s.content_end, end);
    if (!s.has_values) {
      s.has_values = true;
      s.key_indent = IndentOf(
          text, layout.line_starts_[static_cast<size_t>(span.line) - 1]);
    }
  }
  for (const TomlSection& s : layout.sections_) {
    if (s.has_values && s.key_indent.size() > s.header_indent.size() &&
        s.key_indent.rfind(s.header_indent, 0) == 0) {
      layout.step_ = s.key_indent.substr(s.header_indent.size());
      break;
    }
  }
  return layout;
}

size_t TomlLayout::Offset(const toml::source_location& loc) const {
  size_t line = loc.line() == 0 ? 0 : loc.line() - 1;
  if (line >= line_starts_.size()) return line_starts_.back();
  return line_starts_[line] + (loc.column() == 0 ? 0 : loc.column() - 1);
}

int TomlLayout::LineOf(const TomlValue& root, const KeyPath& path) const {
  const TomlValue* v = FindValue(root, path);
  return v == nullptr ? 0 : static_cast<int>(v->location().line());
}

const TomlSection* TomlLayout::SectionOf(const KeyPath& path) const {
  for (const TomlSection& s : sections_) {
    if (s.path == path) return &s;
  }
  return nullptr;
}

TableForm TomlLayout::FormOf(const TomlValue& table,
                             const KeyPath& path) const {
  if (path.empty()) return TableForm::kRoot;
  toml::source_location loc = table.location();
  // The region of a table toml11 made is "[...]" (its own header or a
  // deeper one), "{" for an inline table, or the dotted key.
  std::string_view line = loc.line_str();
  char lead = loc.column() >= 1 && loc.column() <= line.size()
                  ? line[loc.column() - 1]
                  : '\0';
  if (lead == '{') return TableForm::kInline;
  if (lead != '[') return TableForm::kDotted;
  const TomlSection* s = SectionOf(path);
  return s != nullptr && s->line == static_cast<int>(loc.line())
             ? TableForm::kHeader
             : TableForm::kImplicit;
}

std::string TomlLayout::InsertRootKey(const std::string& text,
                                      const std::string& line) const {
  if (root_has_values_) return Splice(text, root_end_, line + "\n");
  return Splice(text, 0, line + (sections_.empty() ? "\n" : "\n\n"));
}

std::string TomlLayout::InsertKey(const std::string& text, const KeyPath& table,
                                  const std::string& line) const {
  const TomlSection* s = SectionOf(table);
  if (s == nullptr) return text;  // callers check FormOf() first
  std::string indent = s->has_values ? s->key_indent : s->header_indent + step_;
  return Splice(text, s->content_end, indent + line + "\n");
}

// A new header is indented like a section at its depth, the closest in the
// tree: as a sibling, or as a cousin is under its own parent; else by the
// step under its parent.
std::string TomlLayout::Indent(const KeyPath& table) const {
  const TomlSection* like = nullptr;
  size_t best = 0;
  for (const TomlSection& s : sections_) {
    if (s.path.size() != table.size()) continue;
    size_t common = 0;
    while (common < table.size() && s.path[common] == table[common]) ++common;
    if (like == nullptr || common > best) {
      like = &s;
      best = common;
    }
  }
  const size_t depth = table.size() - 1;
  if (like != nullptr && best == depth) return like->header_indent;
  const TomlSection* parent =
      SectionOf(KeyPath(table.begin(), table.begin() + depth));
  if (like != nullptr && parent != nullptr) {
    const TomlSection* like_parent =
        SectionOf(KeyPath(like->path.begin(), like->path.begin() + depth));
    if (like_parent != nullptr &&
        like->header_indent.rfind(like_parent->header_indent, 0) == 0) {
      return parent->header_indent +
             like->header_indent.substr(like_parent->header_indent.size());
    }
  }
  if (parent != nullptr) {
    return parent->has_values ? parent->key_indent
                              : parent->header_indent + step_;
  }
  return like != nullptr ? like->header_indent : "";
}

std::string TomlLayout::InsertSection(
    const std::string& text, const KeyPath& table, const std::string& header,
    const std::vector<std::string>& lines) const {
  size_t pos = text.size();
  for (size_t n = table.size(); n > 0; --n) {
    bool any = false;
    size_t end = 0;
    for (const TomlSection& s : sections_) {
      if (StartsWith(s.path, table, n)) {
        any = true;
        end = std::max(end, s.content_end);
      }
    }
    if (any) {
      pos = end;
      break;
    }
  }
  std::string indent = Indent(table);
  std::string insert = indent + "[" + header + "]\n";
  for (const std::string& line : lines) {
    insert += indent + step_ + line + "\n";
  }
  if (!text.empty()) insert.insert(0, "\n");
  return Splice(text, pos, insert);
}

}  // namespace gpulet::engineconfig
