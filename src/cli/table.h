// Table: plain-text tables with left-aligned columns, as `gpulet devices`
// and `gpulet topo` print them. Cells are taken as they are (no wrapping);
// columns are separated by at least `gap` spaces and trailing blanks are
// trimmed so output diffs cleanly.
//
// Ownership: owns copies of its cells. Thread safety: none needed (a value).
#pragma once

#include <string>
#include <vector>

namespace gpulet::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header, size_t gap = 2);

  // Rows shorter than the header are padded with empty cells; longer rows
  // widen the table.
  void AddRow(std::vector<std::string> row);

  // Header, then rows, one line each, each ending in '\n'.
  std::string Render() const;

 private:
  std::vector<std::vector<std::string>> rows_;  // rows_[0] is the header
  size_t gap_;
};

// "0-55,112-167" for a list of CPU numbers (any order, duplicates ignored);
// "N/A" when empty.
std::string FormatCpuList(std::vector<unsigned> cpus);

}  // namespace gpulet::cli
