#include "src/net/http/request.h"

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpulet::http {
namespace {

// RFC 9110 token characters, for methods and header names.
bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u)) continue;
    if (absl::string_view("!#$%&'*+-.^_`|~").find(c) ==
        absl::string_view::npos) {
      return false;
    }
  }
  return true;
}

bool HasControl(absl::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return true;
  }
  return false;
}

absl::Status ParseRequestLine(absl::string_view line, Request& request) {
  std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3 || !IsToken(parts[0]) || parts[1].empty() ||
      HasControl(parts[1])) {
    return absl::InvalidArgumentError("malformed request line");
  }
  if (!absl::StartsWith(parts[2], "HTTP/")) {
    return absl::InvalidArgumentError("malformed request line");
  }
  if (parts[2] != "HTTP/1.1" && parts[2] != "HTTP/1.0") {
    return absl::UnimplementedError(
        absl::StrCat("HTTP version ", parts[2], " is not supported"));
  }
  request.method = std::string(parts[0]);
  request.target = std::string(parts[1]);
  request.path = std::string(parts[1].substr(0, parts[1].find('?')));
  request.version = std::string(parts[2]);
  return absl::OkStatus();
}

}  // namespace

const std::string* Request::Header(absl::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) return &value;
  }
  return nullptr;
}

absl::StatusOr<Head> ParseHead(absl::string_view head,
                               uint64_t max_body_bytes) {
  std::vector<absl::string_view> lines = absl::StrSplit(head, "\r\n");
  Head out;
  if (absl::Status s = ParseRequestLine(lines[0], out.request); !s.ok()) {
    return s;
  }
  bool have_length = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    absl::string_view line = lines[i];
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos || !IsToken(line.substr(0, colon))) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed header line ", i));
    }
    absl::string_view value =
        absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (HasControl(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("control character in header line ", i));
    }
    std::string name = absl::AsciiStrToLower(line.substr(0, colon));
    if (name == "content-length") {
      uint64_t length = 0;
      if (value.empty() || value.size() > 19 ||
          !absl::c_all_of(value,
                          [](char c) {
                            return absl::ascii_isdigit(
                                static_cast<unsigned char>(c));
                          }) ||
          !absl::SimpleAtoi(value, &length)) {
        return absl::InvalidArgumentError("Content-Length is not a number");
      }
      if (have_length && length != out.content_length) {
        return absl::InvalidArgumentError("conflicting Content-Length headers");
      }
      have_length = true;
      out.content_length = length;
    } else if (name == "transfer-encoding") {
      return absl::FailedPreconditionError(
          "Transfer-Encoding is not accepted; send the body with "
          "Content-Length");
    }
    out.request.headers.emplace_back(std::move(name), std::string(value));
  }
  if (out.content_length > max_body_bytes) {
    return absl::OutOfRangeError(
        absl::StrCat("body of ", out.content_length,
                     " bytes is larger than the limit of ", max_body_bytes));
  }
  const std::string* header = out.request.Header("connection");
  const std::string connection =
      header == nullptr ? "" : absl::AsciiStrToLower(*header);
  if (out.request.version == "HTTP/1.0") {
    out.keep_alive = absl::StrContains(connection, "keep-alive");
  } else {
    out.keep_alive = !absl::StrContains(connection, "close");
  }
  const std::string* expect = out.request.Header("expect");
  out.expect_continue =
      expect != nullptr && absl::EqualsIgnoreCase(*expect, "100-continue");
  return out;
}

int StatusCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
      return 411;
    case absl::StatusCode::kOutOfRange:
      return 413;
    case absl::StatusCode::kUnimplemented:
      return 505;
    default:
      return 400;
  }
}

absl::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

std::string FormatResponse(const Response& response, bool keep_alive) {
  return absl::StrCat("HTTP/1.1 ", response.status, " ",
                      ReasonPhrase(response.status),
                      "\r\nContent-Type: ", response.content_type,
                      "\r\nContent-Length: ", response.body.size(),
                      "\r\nConnection: ", keep_alive ? "keep-alive" : "close",
                      "\r\n\r\n", response.body);
}

Response TextResponse(int status, absl::string_view message) {
  return Response{.status = status,
                  .content_type = "text/plain; charset=utf-8",
                  .body = absl::StrCat(message, "\n")};
}

}  // namespace gpulet::http
