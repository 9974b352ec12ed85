// CheckNestingDepth: bounds how deep yaml-cpp's recursive-descent parser
// goes, before it sees the text. The config parser, YamlToJson and the
// simulator's machine parser all call it.
//
// Thread safety: pure function.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gpulet::yaml {

// InvalidArgument "<source>:<line>:1: nesting deeper than <max_depth>
// levels" naming the first line whose block or flow nesting exceeds
// `max_depth`. Conservative: may over-count, never under-counts, except
// that brackets inside a block scalar ("|") count as flow (yaml-cpp's own
// limit still applies behind that).
absl::Status CheckNestingDepth(absl::string_view text, int max_depth,
                               const std::string& source);

}  // namespace gpulet::yaml
