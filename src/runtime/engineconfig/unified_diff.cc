#include "src/runtime/engineconfig/unified_diff.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gpulet::engineconfig {
namespace {

// Past this many cells the middle of the two texts is shown as replaced
// whole rather than aligned line by line.
constexpr size_t kMaxCells = 4'000'000;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl + 1 - start));
    start = nl + 1;
  }
  return lines;
}

enum class Op { kKeep, kRemove, kAdd };

struct Edit {
  Op op;
  size_t a;  // line index in `before` (kKeep, kRemove)
  size_t b;  // line index in `after` (kKeep, kAdd)
};

// Edits turning a[lo_a, hi_a) into b[lo_b, hi_b) through a longest common
// subsequence of lines.
void AlignMiddle(const std::vector<std::string>& a,
                 const std::vector<std::string>& b, size_t lo_a, size_t hi_a,
                 size_t lo_b, size_t hi_b, std::vector<Edit>& out) {
  size_t n = hi_a - lo_a;
  size_t m = hi_b - lo_b;
  if (n * m > kMaxCells) {
    for (size_t i = lo_a; i < hi_a; ++i) out.push_back({Op::kRemove, i, lo_b});
    for (size_t j = lo_b; j < hi_b; ++j) out.push_back({Op::kAdd, hi_a, j});
    return;
  }
  // lcs[i][j]: longest common subsequence of a[lo_a+i..] and b[lo_b+j..].
  std::vector<std::vector<unsigned>> lcs(n + 1, std::vector<unsigned>(m + 1));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] = a[lo_a + i] == b[lo_b + j]
                      ? lcs[i + 1][j + 1] + 1
                      : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  size_t i = 0;
  size_t j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[lo_a + i] == b[lo_b + j]) {
      out.push_back({Op::kKeep, lo_a + i++, lo_b + j++});
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      out.push_back({Op::kRemove, lo_a + i++, lo_b + j});
    } else {
      out.push_back({Op::kAdd, lo_a + i, lo_b + j++});
    }
  }
}

std::string Range(size_t start, size_t count) {
  // diff -u numbers lines from 1; an empty range names the line before it.
  size_t first = count == 0 ? start : start + 1;
  return count == 1 ? absl::StrCat(first) : absl::StrCat(first, ",", count);
}

std::string LineText(const std::string& line) {
  if (!line.empty() && line.back() == '\n') return line;
  return line + "\n\\ No newline at end of file\n";
}

}  // namespace

std::string UnifiedDiff(const std::string& before, const std::string& after,
                        const std::string& name) {
  if (before == after) return "";
  std::vector<std::string> a = Lines(before);
  std::vector<std::string> b = Lines(after);
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  std::vector<Edit> edits;
  for (size_t i = 0; i < head; ++i) edits.push_back({Op::kKeep, i, i});
  AlignMiddle(a, b, head, a.size() - tail, head, b.size() - tail, edits);
  for (size_t k = tail; k > 0; --k) {
    edits.push_back({Op::kKeep, a.size() - k, b.size() - k});
  }

  constexpr size_t kContext = 3;
  std::string out = absl::StrCat("--- ", name, "\n+++ ", name, "\n");
  size_t k = 0;
  while (k < edits.size()) {
    if (edits[k].op == Op::kKeep) {
      ++k;
      continue;
    }
    // A hunk: from kContext lines before this change to kContext lines
    // after the last change closer than 2*kContext to the previous one.
    size_t start = k >= kContext ? k - kContext : 0;
    size_t end = k;
    size_t last_change = k;
    while (end < edits.size() &&
           (edits[end].op != Op::kKeep || end - last_change <= 2 * kContext)) {
      if (edits[end].op != Op::kKeep) last_change = end;
      ++end;
    }
    end = std::min(edits.size(), last_change + kContext + 1);
    size_t count_a = 0;
    size_t count_b = 0;
    for (size_t e = start; e < end; ++e) {
      if (edits[e].op != Op::kAdd) ++count_a;
      if (edits[e].op != Op::kRemove) ++count_b;
    }
    absl::StrAppend(&out, "@@ -", Range(edits[start].a, count_a), " +",
                    Range(edits[start].b, count_b), " @@\n");
    for (size_t e = start; e < end; ++e) {
      const Edit& edit = edits[e];
      switch (edit.op) {
        case Op::kKeep:
          absl::StrAppend(&out, " ", LineText(a[edit.a]));
          break;
        case Op::kRemove:
          absl::StrAppend(&out, "-", LineText(a[edit.a]));
          break;
        case Op::kAdd:
          absl::StrAppend(&out, "+", LineText(b[edit.b]));
          break;
      }
    }
    k = end;
  }
  return out;
}

}  // namespace gpulet::engineconfig
