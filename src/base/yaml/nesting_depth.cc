// CheckNestingDepth: a conservative pre-scan bounding how deep yaml-cpp's
// recursive-descent parser goes. yaml-cpp 0.7 stops at depth 2000 by
// itself; a config file needs about seven levels, a machine file a handful,
// and a low limit keeps stack use small under sanitizers and fuzzing.
#include "src/base/yaml/nesting_depth.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gpulet::yaml {
namespace {

// Counts the syntax that nests: block indentation levels, compact "- - x"
// sequences and flow brackets, skipping quoted scalars (across lines) and
// comments. Every count can only over-estimate the real depth, except that
// brackets inside a block scalar ("|") open flow context here; yaml-cpp's
// own limit still applies behind that.
class NestingScanner {
 public:
  explicit NestingScanner(int max_depth) : max_depth_(max_depth) {}

  // False when the line takes nesting past the limit.
  bool Line(absl::string_view line) {
    size_t i = 0;
    if (quote_ == 0) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i == line.size() || line[i] == '#') return true;
      int indent = static_cast<int>(i);
      while (!indents_.empty() && indents_.back() > indent) indents_.pop_back();
      if (indents_.empty() || indents_.back() < indent) {
        indents_.push_back(indent);
      }
      int compact = 0;
      while (i + 1 < line.size() && (line[i] == '-' || line[i] == '?') &&
             (line[i + 1] == ' ' || line[i + 1] == '\t')) {
        ++compact;
        i += 2;
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      }
      if (Depth() + compact > max_depth_) return false;
    }
    return Scan(line, i);
  }

 private:
  int Depth() const { return static_cast<int>(indents_.size()) + flow_; }

  bool Scan(absl::string_view line, size_t i) {
    char prev = 0;  // last non-blank character outside quotes on this line
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
      if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
        return true;
      }
      // A quote opens a quoted scalar only where a scalar may begin; in
      // "it's" it is plain text.
      bool token_start = prev == 0 || prev == ':' || prev == '-' ||
                         prev == '[' || prev == '{' || prev == ',' ||
                         prev == '?';
      if (c != ' ' && c != '\t') prev = c;
      if ((c == '"' || c == '\'') && token_start) {
        quote_ = c;
      } else if (c == '[' || c == '{') {
        ++flow_;
        if (Depth() > max_depth_) return false;
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

absl::Status CheckNestingDepth(absl::string_view text, int max_depth,
                               const std::string& source) {
  NestingScanner scanner(max_depth);
  int line_number = 1;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!scanner.Line(line)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line_number,
                                                     ":1: nesting deeper than ",
                                                     max_depth, " levels"));
    }
    ++line_number;
  }
  return absl::OkStatus();
}

}  // namespace gpulet::yaml
