#include "src/net/kube/api_status.h"

#include <cstdint>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpulet::kube {
namespace {

constexpr char kCodeUrl[] = "gpulet.kube/http-code";
constexpr char kReasonUrl[] = "gpulet.kube/reason";
constexpr char kRetryAfterUrl[] = "gpulet.kube/retry-after-seconds";
constexpr char kTooLargeUrl[] = "gpulet.kube/resource-version-too-large";

// Server text quoted into a message: bounded, control characters escaped.
std::string Excerpt(absl::string_view text, size_t max = 300) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text.substr(0, max)) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (text.size() > max) out += "...";
  return out;
}

absl::StatusCode CodeFor(int http, absl::string_view reason) {
  switch (http) {
    case 400:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kFailedPrecondition;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 500:
      return absl::StatusCode::kInternal;
    case 501:
      return absl::StatusCode::kUnimplemented;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      return http > 500 && http < 600 ? absl::StatusCode::kUnavailable
                                      : absl::StatusCode::kUnknown;
  }
}

std::string StringField(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

absl::Status Make(absl::string_view what, int http, const std::string& reason,
                  absl::string_view message,
                  std::optional<int64_t> retry_after_seconds) {
  std::string text = absl::StrCat(what, ": ", http);
  if (!reason.empty()) absl::StrAppend(&text, " ", Excerpt(reason, 60));
  if (!message.empty()) absl::StrAppend(&text, ": ", Excerpt(message));
  absl::Status status(CodeFor(http, reason), text);
  status.SetPayload(kCodeUrl, absl::Cord(absl::StrCat(http)));
  if (!reason.empty()) status.SetPayload(kReasonUrl, absl::Cord(reason));
  if (retry_after_seconds) {
    status.SetPayload(kRetryAfterUrl,
                      absl::Cord(absl::StrCat(*retry_after_seconds)));
  }
  return status;
}

// The server could not serve a list or watch at the resourceVersion asked
// for because it has not seen that version yet (its cache is behind):
// details.causes[].reason ResourceVersionTooLarge, or, from servers before
// 1.19, only the message.
bool TooLargeResourceVersion(const nlohmann::json& body) {
  auto details = body.find("details");
  if (details != body.end() && details->is_object()) {
    auto causes = details->find("causes");
    if (causes != details->end() && causes->is_array()) {
      for (const nlohmann::json& cause : *causes) {
        if (cause.is_object() &&
            StringField(cause, "reason") == "ResourceVersionTooLarge") {
          return true;
        }
      }
    }
  }
  return StringField(body, "message").find("Too large resource version") !=
         std::string::npos;
}

absl::Status MarkCauses(absl::Status status, const nlohmann::json& body) {
  if (TooLargeResourceVersion(body)) {
    status.SetPayload(kTooLargeUrl, absl::Cord("1"));
  }
  return status;
}

std::optional<int64_t> ParseRetryAfter(absl::string_view header) {
  int64_t seconds = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(header), &seconds) ||
      seconds < 0) {
    return std::nullopt;  // the HTTP-date form is not used by API servers
  }
  return std::min<int64_t>(seconds, 3600);
}

}  // namespace

absl::Status StatusFromResponse(absl::string_view what,
                                const Response& response) {
  if (response.status >= 200 && response.status < 300) {
    return absl::OkStatus();
  }
  std::optional<int64_t> retry_after = ParseRetryAfter(response.retry_after);
  nlohmann::json body =
      nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_object() && StringField(body, "kind") == "Status") {
    std::string reason = StringField(body, "reason");
    return MarkCauses(Make(what, response.status, reason,
                           StringField(body, "message"), retry_after),
                      body);
  }
  return Make(what, response.status, "", response.body, retry_after);
}

absl::Status StatusFromApiStatus(absl::string_view what,
                                 const nlohmann::json& status) {
  int http = 500;
  if (status.is_object()) {
    auto code = status.find("code");
    if (code != status.end() && code->is_number_integer()) {
      int64_t value = code->get<int64_t>();
      if (value >= 100 && value < 600) http = static_cast<int>(value);
    }
  }
  if (!status.is_object()) {
    return Make(what, http, "", "error event without a Status object",
                std::nullopt);
  }
  return MarkCauses(Make(what, http, StringField(status, "reason"),
                         StringField(status, "message"), std::nullopt),
                    status);
}

int HttpCode(const absl::Status& status) {
  auto payload = status.GetPayload(kCodeUrl);
  int code = 0;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &code)) return 0;
  return code;
}

std::string Reason(const absl::Status& status) {
  auto payload = status.GetPayload(kReasonUrl);
  return payload ? std::string(*payload) : std::string();
}

bool IsGone(const absl::Status& status) { return HttpCode(status) == 410; }

bool IsResourceVersionTooLarge(const absl::Status& status) {
  return status.GetPayload(kTooLargeUrl).has_value();
}

std::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  auto payload = status.GetPayload(kRetryAfterUrl);
  int64_t seconds = 0;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &seconds)) {
    return std::nullopt;
  }
  return absl::Seconds(seconds);
}

std::string ForLog(const absl::Status& status) {
  return status.ToString(absl::StatusToStringMode::kWithNoExtraData);
}

absl::StatusOr<nlohmann::json> DecodeObject(absl::string_view what,
                                            absl::string_view body) {
  nlohmann::json value =
      nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": response is not a JSON object: ", Excerpt(body, 120)));
  }
  return value;
}

}  // namespace gpulet::kube
