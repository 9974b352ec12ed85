#include "src/net/kube/list_page.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/status_macros.h"
#include "src/net/kube/api_status.h"

namespace gpulet::kube {
namespace {

std::string MetadataString(const nlohmann::json& list, const char* key) {
  auto metadata = list.find("metadata");
  if (metadata == list.end() || !metadata->is_object()) return "";
  auto value = metadata->find(key);
  if (value == metadata->end() || !value->is_string()) return "";
  return value->get<std::string>();
}

}  // namespace

absl::StatusOr<ListPage> DecodeListPage(absl::string_view what,
                                        absl::string_view body) {
  GPULET_ASSIGN_OR_RETURN(nlohmann::json list, DecodeObject(what, body));
  ListPage page;
  page.resource_version = MetadataString(list, "resourceVersion");
  page.continue_token = MetadataString(list, "continue");
  auto items = list.find("items");
  if (items == list.end() || items->is_null()) return page;
  if (!items->is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": items is not a list"));
  }
  page.items.reserve(items->size());
  for (nlohmann::json& item : *items) {
    if (!item.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": an item is not an object"));
    }
    page.items.push_back(std::move(item));
  }
  return page;
}

}  // namespace gpulet::kube
