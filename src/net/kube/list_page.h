// ListPage: one page of a list response (GET /api/v1/pods?limit=500):
//   {"kind":"PodList","metadata":{"resourceVersion":"42","continue":"..."},
//    "items":[...]}
// The resourceVersion is where a watch that follows the list starts; a
// non-empty continue token asks for the next page.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace gpulet::kube {

struct ListPage {
  std::vector<nlohmann::json> items{};
  std::string resource_version{};
  std::string continue_token{};
};

// Decodes a list body; `what` names the request in errors. `items` must be
// a list of objects (null reads as empty).
absl::StatusOr<ListPage> DecodeListPage(absl::string_view what,
                                        absl::string_view body);

}  // namespace gpulet::kube
