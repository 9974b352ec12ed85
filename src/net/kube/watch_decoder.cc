#include "src/net/kube/watch_decoder.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace gpulet::kube {
namespace {

struct TypeName {
  const char* name;
  EventType type;
};
constexpr TypeName kTypes[] = {
    {"ADDED", EventType::kAdded},     {"MODIFIED", EventType::kModified},
    {"DELETED", EventType::kDeleted}, {"BOOKMARK", EventType::kBookmark},
    {"ERROR", EventType::kError},
};

absl::Status BadLine(absl::string_view line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(
      "watch stream: ", what, ": \"", absl::CHexEscape(line.substr(0, 120)),
      line.size() > 120 ? "...\"" : "\""));
}

}  // namespace

const char* EventTypeName(EventType type) {
  for (const TypeName& t : kTypes) {
    if (t.type == type) return t.name;
  }
  return "?";
}

absl::StatusOr<WatchEvent> DecodeWatchEvent(absl::string_view line) {
  nlohmann::json value =
      nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) return BadLine(line, "not a JSON object");
  auto type = value.find("type");
  if (type == value.end() || !type->is_string()) {
    return BadLine(line, "event without a type");
  }
  WatchEvent event;
  const std::string& name = type->get_ref<const std::string&>();
  bool known = false;
  for (const TypeName& t : kTypes) {
    if (name == t.name) {
      event.type = t.type;
      known = true;
    }
  }
  if (!known) return BadLine(line, "unknown event type");
  auto object = value.find("object");
  if (object == value.end() || !object->is_object()) {
    return BadLine(line, "event without an object");
  }
  event.object = std::move(*object);
  return event;
}

std::string ResourceVersionOf(const nlohmann::json& object) {
  if (!object.is_object()) return "";
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  auto rv = metadata->find("resourceVersion");
  if (rv == metadata->end() || !rv->is_string()) return "";
  return rv->get<std::string>();
}

absl::Status WatchDecoder::TakeLine(absl::string_view line,
                                    std::vector<WatchEvent>* out) {
  if (absl::StripAsciiWhitespace(line).empty()) return absl::OkStatus();
  absl::StatusOr<WatchEvent> event = DecodeWatchEvent(line);
  if (!event.ok()) return event.status();
  out->push_back(*std::move(event));
  return absl::OkStatus();
}

absl::Status WatchDecoder::Feed(absl::string_view chunk,
                                std::vector<WatchEvent>* out) {
  if (!failed_.ok()) return failed_;
  while (!chunk.empty()) {
    size_t newline = chunk.find('\n');
    absl::string_view piece = chunk.substr(
        0, newline == absl::string_view::npos ? chunk.size() : newline);
    if (pending_.size() + piece.size() > max_line_) {
      failed_ = absl::InvalidArgumentError(absl::StrCat(
          "watch stream: an event is longer than ", max_line_, " bytes"));
      return failed_;
    }
    if (newline == absl::string_view::npos) {
      pending_.append(piece.data(), piece.size());
      break;
    }
    absl::Status status;
    if (pending_.empty()) {
      status = TakeLine(piece, out);
    } else {
      pending_.append(piece.data(), piece.size());
      status = TakeLine(pending_, out);
      pending_.clear();
    }
    if (!status.ok()) {
      failed_ = status;
      return status;
    }
    chunk.remove_prefix(newline + 1);
  }
  return absl::OkStatus();
}

absl::Status WatchDecoder::Finish(std::vector<WatchEvent>* out) {
  if (!failed_.ok()) return failed_;
  std::string last = std::move(pending_);
  pending_.clear();
  failed_ = TakeLine(last, out);
  return failed_;
}

}  // namespace gpulet::kube
