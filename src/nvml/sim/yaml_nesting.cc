// CheckNestingDepth: a conservative pre-scan that bounds how deep yaml-cpp's
// recursive-descent parser will go. yaml-cpp 0.7 stops at depth 2000 by
// itself, but a machine file never needs more than a handful of levels, and
// a low limit keeps stack use small under sanitizers.
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/nvml/sim/yaml_fields.h"

namespace gpulet::sim::yaml {
namespace {

// Tracks the parts of YAML syntax that nest: block indentation, compact
// "- - x" sequences, flow brackets, and quoted scalars (whose brackets do
// not count) across lines.
class NestingScanner {
 public:
  explicit NestingScanner(int max_depth) : max_depth_(max_depth) {}

  // Returns false when the line pushes nesting past the limit.
  bool Line(absl::string_view line) {
    size_t i = 0;
    if (quote_ == 0 && flow_ == 0) {
      while (i < line.size() && line[i] == ' ') ++i;
      if (i == line.size() || line[i] == '#') return true;
      int indent = static_cast<int>(i);
      while (!indents_.empty() && indents_.back() > indent) indents_.pop_back();
      if (indents_.empty() || indents_.back() < indent)
        indents_.push_back(indent);
      int compact = 0;
      while (i + 1 < line.size() && (line[i] == '-' || line[i] == '?') &&
             (line[i + 1] == ' ' || line[i + 1] == '\t')) {
        ++compact;
        i += 2;
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      }
      if (static_cast<int>(indents_.size()) + compact > max_depth_) {
        return false;
      }
    }
    return Scan(line, i);
  }

 private:
  bool Scan(absl::string_view line, size_t i) {
    char prev = 0;  // last non-blank character before `i` on this line
    for (; i < line.size(); ++i) {
      char c = line[i];
      if (quote_ == '"') {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          quote_ = 0;
          prev = c;
        }
        continue;
      }
      if (quote_ == '\'') {
        if (c == '\'' && i + 1 < line.size() && line[i + 1] == '\'') {
          ++i;  // '' is an escaped quote
        } else if (c == '\'') {
          quote_ = 0;
          prev = c;
        }
        continue;
      }
      // A quote opens a quoted scalar only where a scalar can begin: at the
      // start of the line's content or after an indicator. In "it's" or
      // "a 'b" it is plain text.
      bool token_start = prev == 0 || prev == ':' || prev == '-' ||
                         prev == '[' || prev == '{' || prev == ',' ||
                         prev == '?';
      if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
        return true;
      }
      if (c != ' ' && c != '\t') prev = c;
      if ((c == '"' || c == '\'') && token_start) {
        quote_ = c;
      } else if (c == '[' || c == '{') {
        if (++flow_ + static_cast<int>(indents_.size()) > max_depth_) {
          return false;
        }
      } else if ((c == ']' || c == '}') && flow_ > 0) {
        --flow_;
      }
    }
    return true;
  }

  const int max_depth_;
  std::vector<int> indents_;
  int flow_ = 0;
  char quote_ = 0;
};

}  // namespace

absl::Status CheckNestingDepth(const Ctx& ctx, absl::string_view text,
                               int max_depth) {
  NestingScanner scanner(max_depth);
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!scanner.Line(line)) {
      YAML::Mark mark;
      mark.line = line_number;
      mark.column = 0;
      mark.pos = 0;
      return ErrorAt(
          ctx, mark, "",
          absl::StrCat("nesting deeper than ", max_depth, " levels"));
    }
    ++line_number;
  }
  return absl::OkStatus();
}

}  // namespace gpulet::sim::yaml
