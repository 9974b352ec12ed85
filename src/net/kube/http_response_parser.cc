#include "src/net/kube/http_response_parser.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gpulet::kube {
namespace {

bool AllDigits(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isdigit(c);
  });
}

// `value` as a decimal Content-Length; false when it is not one.
bool ParseLength(absl::string_view value, uint64_t* out) {
  if (!AllDigits(value) || value.size() > 18) return false;
  uint64_t n = 0;
  for (char c : value) n = n * 10 + static_cast<uint64_t>(c - '0');
  *out = n;
  return true;
}

bool HasToken(absl::string_view list, absl::string_view token) {
  for (absl::string_view t : absl::StrSplit(list, ',')) {
    if (absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(t), token)) {
      return true;
    }
  }
  return false;
}

}  // namespace

absl::Status HttpResponseParser::Fail(absl::Status status) {
  state_ = State::kFailed;
  keep_alive_ = false;
  return status;
}

absl::Status HttpResponseParser::Feed(absl::string_view data,
                                      const BodyFn& on_body) {
  if (state_ == State::kFailed) {
    return absl::FailedPreconditionError("the response already failed");
  }
  if (!data.empty()) started_ = true;
  while (!data.empty() && !stopped_) {
    if (state_ == State::kDone) {
      keep_alive_ = false;  // bytes nobody asked for: drop the connection
      return absl::OkStatus();
    }
    if (state_ == State::kBody || state_ == State::kChunkData ||
        state_ == State::kUntilClose) {
      size_t n = data.size();
      if (state_ != State::kUntilClose) {
        n = static_cast<size_t>(std::min<uint64_t>(remaining_, n));
        remaining_ -= n;
        if (remaining_ == 0) {
          state_ = state_ == State::kBody ? State::kDone : State::kChunkDataEnd;
        }
      }
      if (n > 0 && !on_body(data.substr(0, n))) {
        stopped_ = true;
        keep_alive_ = false;
      }
      data.remove_prefix(n);
      continue;
    }
    const size_t newline = data.find('\n');
    const size_t take =
        newline == absl::string_view::npos ? data.size() : newline + 1;
    const bool head = state_ == State::kStatusLine ||
                      state_ == State::kHeaders || state_ == State::kTrailers;
    const size_t limit = head ? max_head_bytes_ - head_bytes_ : kMaxChunkLine;
    if (line_.size() + take > limit) {
      return Fail(absl::ResourceExhaustedError(
          absl::StrCat(head ? "the response's headers are longer than "
                            : "a chunk-size line is longer than ",
                       head ? max_head_bytes_ : kMaxChunkLine, " bytes")));
    }
    line_.append(data.data(), take);
    data.remove_prefix(take);
    if (newline == absl::string_view::npos) return absl::OkStatus();
    if (head) head_bytes_ += line_.size();
    absl::string_view line(line_);
    line.remove_suffix(1);
    if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
    absl::Status status = OnLine(line);
    line_.clear();
    if (!status.ok()) return Fail(std::move(status));
  }
  return absl::OkStatus();
}

absl::Status HttpResponseParser::OnLine(absl::string_view line) {
  switch (state_) {
    case State::kStatusLine:
      return OnStatusLine(line);
    case State::kHeaders:
      return OnHeader(line);
    case State::kChunkSize:
      return OnChunkSize(line);
    case State::kChunkDataEnd:
      if (!line.empty()) {
        return absl::InvalidArgumentError(
            "a chunk's data is longer than its size");
      }
      state_ = State::kChunkSize;
      return absl::OkStatus();
    case State::kTrailers:
      if (line.empty()) state_ = State::kDone;
      return absl::OkStatus();
    default:
      return absl::InternalError("not reading a line");
  }
}

absl::Status HttpResponseParser::OnStatusLine(absl::string_view line) {
  // "HTTP/1.1 200 OK": the version, a space, three digits, then a space and
  // a reason phrase or nothing.
  if (line.size() < 12 || !absl::StartsWith(line, "HTTP/1.") ||
      !absl::ascii_isdigit(line[7]) || line[8] != ' ' ||
      !AllDigits(line.substr(9, 3)) || (line.size() > 12 && line[12] != ' ')) {
    return absl::InvalidArgumentError(
        absl::StrCat("not an HTTP/1.x status line: \"",
                     absl::CHexEscape(line.substr(0, 64)), "\""));
  }
  status_ = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (status_ < 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("status code ", status_, " is out of range"));
  }
  http10_ = line[7] == '0';
  keep_alive_ = !http10_;
  state_ = State::kHeaders;
  return absl::OkStatus();
}

absl::Status HttpResponseParser::OnHeader(absl::string_view line) {
  if (line.empty()) return OnHeadEnd();
  const size_t colon = line.find(':');
  if (colon == 0 || colon == absl::string_view::npos ||
      absl::ascii_isspace(line[0]) || absl::ascii_isspace(line[colon - 1])) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed header line \"",
                     absl::CHexEscape(line.substr(0, 64)), "\""));
  }
  const absl::string_view name = line.substr(0, colon);
  const absl::string_view value =
      absl::StripAsciiWhitespace(line.substr(colon + 1));
  if (absl::EqualsIgnoreCase(name, "content-length")) {
    uint64_t length = 0;
    if (!ParseLength(value, &length) || (has_length_ && length != remaining_)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad Content-Length \"",
                       absl::CHexEscape(value.substr(0, 32)), "\""));
    }
    has_length_ = true;
    remaining_ = length;
  } else if (absl::EqualsIgnoreCase(name, "transfer-encoding")) {
    if (!absl::EqualsIgnoreCase(value, "chunked")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Transfer-Encoding \"", absl::CHexEscape(value.substr(0, 32)),
          "\" is not supported"));
    }
    chunked_ = true;
  } else if (absl::EqualsIgnoreCase(name, "connection")) {
    if (HasToken(value, "close")) keep_alive_ = false;
    if (http10_ && HasToken(value, "keep-alive")) keep_alive_ = true;
  } else if (absl::EqualsIgnoreCase(name, "retry-after")) {
    retry_after_ = std::string(value);
  }
  return absl::OkStatus();
}

absl::Status HttpResponseParser::OnHeadEnd() {
  if (status_ == 101) {
    return absl::InvalidArgumentError("unexpected 101 Switching Protocols");
  }
  if (status_ < 200) {  // interim: the real response follows
    status_ = 0;
    chunked_ = has_length_ = false;
    remaining_ = 0;
    retry_after_.clear();
    state_ = State::kStatusLine;
    return absl::OkStatus();
  }
  if (head_request_ || status_ == 204 || status_ == 304) {
    state_ = State::kDone;
  } else if (chunked_) {
    state_ = State::kChunkSize;
  } else if (has_length_) {
    state_ = remaining_ == 0 ? State::kDone : State::kBody;
  } else {
    state_ = State::kUntilClose;
    keep_alive_ = false;
  }
  return absl::OkStatus();
}

absl::Status HttpResponseParser::OnChunkSize(absl::string_view line) {
  absl::string_view size = line.substr(0, line.find(';'));
  size = absl::StripAsciiWhitespace(size);
  uint64_t n = 0;
  if (size.empty() || size.size() > 15) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad chunk size \"", absl::CHexEscape(size.substr(0, 32)), "\""));
  }
  for (char c : size) {
    if (!absl::ascii_isxdigit(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad chunk size \"", absl::CHexEscape(size.substr(0, 32)), "\""));
    }
    const int digit =
        absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10;
    n = n * 16 + static_cast<uint64_t>(digit);
  }
  remaining_ = n;
  state_ = n == 0 ? State::kTrailers : State::kChunkData;
  return absl::OkStatus();
}

absl::Status HttpResponseParser::Finish() {
  switch (state_) {
    case State::kDone:
      return absl::OkStatus();
    case State::kUntilClose:
      state_ = State::kDone;
      return absl::OkStatus();
    case State::kFailed:
      return absl::FailedPreconditionError("the response already failed");
    default:
      break;
  }
  if (stopped_) return absl::OkStatus();
  keep_alive_ = false;
  if (state_ == State::kStatusLine || state_ == State::kHeaders) {
    return absl::InvalidArgumentError(
        started_ ? "the connection closed inside the response's headers"
                 : "the connection closed before a response");
  }
  if (state_ == State::kBody) {
    return absl::InvalidArgumentError(
        absl::StrCat("the connection closed with ", remaining_,
                     " bytes of the body still to come"));
  }
  return absl::InvalidArgumentError(
      "the connection closed inside the chunked body");
}

}  // namespace gpulet::kube
