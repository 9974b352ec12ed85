// The `topology:` section: the PCIe common ancestor of every GPU pair, as an
// nvidia-smi style matrix or as a default plus groups, always producing a
// full symmetric n x n matrix with INTERNAL on the diagonal.
#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sim/gpu_parser.h"

namespace gpulet::sim::parser {
namespace {

using yaml::Ctx;
using yaml::Field;
using yaml::MapView;
using Matrix = std::vector<std::vector<nvmlGpuTopologyLevel_t>>;

constexpr const char* kTokens =
    "X, PIX (SINGLE), PXB (MULTIPLE), PHB (HOSTBRIDGE), NODE, SYS (SYSTEM)";

// Token -> level; false for anything else. "X" maps to INTERNAL.
bool LevelFromToken(absl::string_view token, nvmlGpuTopologyLevel_t* level) {
  static const std::pair<const char*, nvmlGpuTopologyLevel_t> kNames[] = {
      {"X", NVML_TOPOLOGY_INTERNAL},
      {"INTERNAL", NVML_TOPOLOGY_INTERNAL},
      {"PIX", NVML_TOPOLOGY_SINGLE},
      {"SINGLE", NVML_TOPOLOGY_SINGLE},
      {"PXB", NVML_TOPOLOGY_MULTIPLE},
      {"MULTIPLE", NVML_TOPOLOGY_MULTIPLE},
      {"PHB", NVML_TOPOLOGY_HOSTBRIDGE},
      {"HOSTBRIDGE", NVML_TOPOLOGY_HOSTBRIDGE},
      {"NODE", NVML_TOPOLOGY_NODE},
      {"SYS", NVML_TOPOLOGY_SYSTEM},
      {"SYSTEM", NVML_TOPOLOGY_SYSTEM},
      {"SOC", NVML_TOPOLOGY_SYSTEM}};
  for (const auto& [name, value] : kNames) {
    if (absl::EqualsIgnoreCase(name, token)) {
      *level = value;
      return true;
    }
  }
  return false;
}

std::string TokenError(absl::string_view token) {
  if (token.size() > 2 && absl::StartsWithIgnoreCase(token, "NV") &&
      absl::ascii_isdigit(static_cast<unsigned char>(token[2]))) {
    return absl::StrCat("\"", token,
                        "\" is an NVLink count, not a PCIe level; list NVLinks "
                        "under gpus[i].nvlinks and give the PCIe level here");
  }
  return absl::StrCat("unknown topology level \"", absl::CHexEscape(token),
                      "\" (expected ", kTokens, ")");
}

// Reads a level that is not "X" (off-diagonal, default, group).
absl::StatusOr<nvmlGpuTopologyLevel_t> ReadLevel(const Ctx& ctx,
                                                 const Field& field) {
  GPULET_ASSIGN_OR_RETURN(std::string token, yaml::ReadString(ctx, field, 16));
  nvmlGpuTopologyLevel_t level;
  if (!LevelFromToken(token, &level)) {
    return yaml::FieldError(ctx, field, TokenError(token));
  }
  if (absl::EqualsIgnoreCase(token, "X")) {
    return yaml::FieldError(ctx, field,
                            "X marks a GPU itself; use it only on "
                            "the diagonal");
  }
  return level;
}

struct Token {
  std::string text;
  YAML::Mark mark;
};

// Splits a matrix row into tokens with their positions. A row is a string
// of whitespace-separated tokens or a list of strings.
absl::StatusOr<std::vector<Token>> RowTokens(const Ctx& ctx, const Field& row) {
  std::vector<Token> tokens;
  if (row.node.IsScalar()) {
    const std::string& text = row.node.Scalar();
    YAML::Mark base = row.node.Mark();
    // Quoted scalars ("!" tag) start one column after their mark.
    int offset = row.node.Tag() == "!" ? 1 : 0;
    for (size_t i = 0; i < text.size();) {
      if (absl::ascii_isspace(static_cast<unsigned char>(text[i]))) {
        ++i;
        continue;
      }
      size_t end = i;
      while (end < text.size() &&
             !absl::ascii_isspace(static_cast<unsigned char>(text[end]))) {
        ++end;
      }
      YAML::Mark mark = base;
      mark.column += offset + static_cast<int>(i);
      tokens.push_back(Token{text.substr(i, end - i), mark});
      i = end;
    }
    return tokens;
  }
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          yaml::ReadList(ctx, row, kMaxGpus));
  for (const Field& item : items) {
    GPULET_ASSIGN_OR_RETURN(std::string text, yaml::ReadString(ctx, item, 16));
    tokens.push_back(Token{text, item.node.Mark()});
  }
  return tokens;
}

absl::StatusOr<Matrix> ReadMatrix(const Ctx& ctx, const Field& field,
                                  size_t n) {
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> rows,
                          yaml::ReadList(ctx, field, kMaxGpus));
  if (rows.size() != n) {
    return yaml::FieldError(
        ctx, field,
        absl::StrCat("has ", rows.size(), " rows for ", n,
                     " GPUs; the matrix must be ", n, "x", n));
  }
  Matrix m(n, std::vector<nvmlGpuTopologyLevel_t>(n));
  std::vector<std::vector<Token>> tokens(n);
  for (size_t i = 0; i < n; ++i) {
    GPULET_ASSIGN_OR_RETURN(tokens[i], RowTokens(ctx, rows[i]));
    if (tokens[i].size() != n) {
      return yaml::FieldError(
          ctx, rows[i],
          absl::StrCat("has ", tokens[i].size(), " entries; expected ", n));
    }
    for (size_t j = 0; j < n; ++j) {
      const Token& t = tokens[i][j];
      std::string path = yaml::IndexPath(rows[i].path, j);
      if (!LevelFromToken(t.text, &m[i][j])) {
        return yaml::ErrorAt(ctx, t.mark, path, TokenError(t.text));
      }
      bool is_x = absl::EqualsIgnoreCase(t.text, "X");
      if (i == j && m[i][j] != NVML_TOPOLOGY_INTERNAL) {
        return yaml::ErrorAt(ctx, t.mark, path,
                             "the diagonal must be X (a GPU and itself)");
      }
      if (i != j && is_x) {
        return yaml::ErrorAt(ctx, t.mark, path,
                             "X marks a GPU itself; use it only on the "
                             "diagonal");
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (m[i][j] != m[j][i]) {
        return yaml::ErrorAt(
            ctx, tokens[i][j].mark, yaml::IndexPath(rows[i].path, j),
            absl::StrCat("\"", tokens[i][j].text, "\" differs from \"",
                         tokens[j][i].text, "\" at ",
                         yaml::IndexPath(rows[j].path, i),
                         "; the matrix must be symmetric"));
      }
    }
  }
  return m;
}

absl::Status ApplyGroups(const Ctx& ctx, const Field& field, Matrix* m) {
  const size_t n = m->size();
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> groups,
                          yaml::ReadList(ctx, field, 4 * kMaxGpus));
  for (const Field& group : groups) {
    GPULET_ASSIGN_OR_RETURN(MapView map,
                            MapView::Read(ctx, group, {"gpus", "level"}));
    GPULET_ASSIGN_OR_RETURN(Field gpus_field, map.Require("gpus"));
    GPULET_ASSIGN_OR_RETURN(Field level_field, map.Require("level"));
    if (n == 0) return yaml::FieldError(ctx, gpus_field, "there are no GPUs");
    GPULET_ASSIGN_OR_RETURN(
        std::vector<unsigned> gpus,
        yaml::ReadIndexList(ctx, gpus_field, static_cast<unsigned>(n - 1)));
    if (gpus.size() < 2) {
      return yaml::FieldError(ctx, gpus_field,
                              "a group needs at least two GPUs");
    }
    GPULET_ASSIGN_OR_RETURN(nvmlGpuTopologyLevel_t level,
                            ReadLevel(ctx, level_field));
    for (unsigned a : gpus) {
      for (unsigned b : gpus) {
        if (a != b) (*m)[a][b] = level;
      }
    }
  }
  return absl::OkStatus();
}

Matrix DefaultMatrix(const std::vector<Gpu>& gpus) {
  const size_t n = gpus.size();
  Matrix m(n, std::vector<nvmlGpuTopologyLevel_t>(n, NVML_TOPOLOGY_SYSTEM));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (i == j) {
        m[i][j] = NVML_TOPOLOGY_INTERNAL;
      } else if (gpus[i].numa_node == gpus[j].numa_node) {
        m[i][j] = NVML_TOPOLOGY_NODE;
      }
    }
  }
  return m;
}

}  // namespace

absl::StatusOr<Matrix> ParseTopology(const Ctx& ctx,
                                     const std::optional<Field>& field,
                                     const std::vector<Gpu>& gpus) {
  Matrix m = DefaultMatrix(gpus);
  if (!field) return m;
  GPULET_ASSIGN_OR_RETURN(
      MapView map, MapView::Read(ctx, *field, {"matrix", "default", "groups"}));
  std::optional<Field> matrix = map.Find("matrix");
  if (matrix) {
    if (map.Has("default") || map.Has("groups")) {
      return yaml::FieldError(ctx, *matrix,
                              "give either matrix or default/groups, not both");
    }
    return ReadMatrix(ctx, *matrix, gpus.size());
  }
  if (std::optional<Field> level_field = map.Find("default")) {
    GPULET_ASSIGN_OR_RETURN(nvmlGpuTopologyLevel_t level,
                            ReadLevel(ctx, *level_field));
    for (size_t i = 0; i < m.size(); ++i) {
      for (size_t j = 0; j < m.size(); ++j) {
        if (i != j) m[i][j] = level;
      }
    }
  }
  if (std::optional<Field> groups = map.Find("groups")) {
    GPULET_RETURN_IF_ERROR(ApplyGroups(ctx, *groups, &m));
  }
  return m;
}

}  // namespace gpulet::sim::parser
