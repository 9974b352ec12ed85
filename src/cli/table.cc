#include "src/cli/table.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpulet::cli {

Table::Table(std::vector<std::string> header, size_t gap) : gap_(gap) {
  rows_.push_back(std::move(header));
}

void Table::AddRow(std::vector<std::string> row) {
  rows_.push_back(std::move(row));
}

std::string Table::Render() const {
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    if (row.size() > widths.size()) widths.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) {
        line.append(widths[c] - row[c].size() + gap_, ' ');
      }
    }
    line.erase(line.find_last_not_of(' ') + 1);
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

std::string FormatCpuList(std::vector<unsigned> cpus) {
  if (cpus.empty()) return "N/A";
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::vector<std::string> ranges;
  size_t start = 0;
  for (size_t i = 1; i <= cpus.size(); ++i) {
    if (i < cpus.size() && cpus[i] == cpus[i - 1] + 1) continue;
    ranges.push_back(i - 1 == start
                         ? absl::StrCat(cpus[start])
                         : absl::StrCat(cpus[start], "-", cpus[i - 1]));
    start = i;
  }
  return absl::StrJoin(ranges, ",");
}

}  // namespace gpulet::cli
