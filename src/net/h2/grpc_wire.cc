#include "src/net/h2/grpc_wire.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gpulet::h2 {

std::string MessagePrefix(size_t size) {
  std::string prefix(kPrefixSize, '\0');
  prefix[1] = static_cast<char>((size >> 24) & 0xff);
  prefix[2] = static_cast<char>((size >> 16) & 0xff);
  prefix[3] = static_cast<char>((size >> 8) & 0xff);
  prefix[4] = static_cast<char>(size & 0xff);
  return prefix;
}

absl::StatusOr<std::string_view> SingleMessage(std::string_view body,
                                               size_t max_size) {
  if (body.size() < kPrefixSize) {
    return absl::InternalError(absl::StrCat(
        "request is ", body.size(), " bytes, shorter than a message prefix"));
  }
  const auto byte = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<unsigned char>(body[i]));
  };
  if (byte(0) != 0) {
    return absl::UnimplementedError(
        "compressed messages are not supported (no grpc-encoding)");
  }
  const size_t size =
      (byte(1) << 24) | (byte(2) << 16) | (byte(3) << 8) | byte(4);
  if (size > max_size) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "received message larger than max (", size, " vs. ", max_size, ")"));
  }
  if (body.size() != kPrefixSize + size) {
    return absl::InternalError(absl::StrCat("message prefix says ", size,
                                            " bytes, the request carries ",
                                            body.size() - kPrefixSize));
  }
  return body.substr(kPrefixSize);
}

absl::StatusOr<std::chrono::nanoseconds> ParseTimeout(std::string_view value) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed grpc-timeout \"", std::string(value), "\""));
  };
  if (value.size() < 2 || value.size() > 9) return bad();
  int64_t amount = 0;
  for (char c : value.substr(0, value.size() - 1)) {
    if (c < '0' || c > '9') return bad();
    amount = amount * 10 + (c - '0');
  }
  using std::chrono::nanoseconds;
  switch (value.back()) {
    case 'H':
      return std::chrono::hours(amount);
    case 'M':
      return std::chrono::minutes(amount);
    case 'S':
      return std::chrono::seconds(amount);
    case 'm':
      return std::chrono::milliseconds(amount);
    case 'u':
      return std::chrono::microseconds(amount);
    case 'n':
      return nanoseconds(amount);
    default:
      return bad();
  }
}

std::string FormatTimeout(std::chrono::nanoseconds timeout) {
  constexpr int64_t kMax = 99999999;
  int64_t n = std::max<int64_t>(timeout.count(), 0);
  for (const char unit : {'n', 'u', 'm', 'S', 'M'}) {
    if (n <= kMax) return absl::StrCat(n, std::string(1, unit));
    const int64_t divisor = (unit == 'S') ? 60 : 1000;
    n = (n + divisor - 1) / divisor;
  }
  return absl::StrCat(std::min(n / 60 + 1, kMax), "H");
}

std::string PercentEncode(absl::string_view message) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(message.size());
  for (const char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u <= 0x7e && u != '%') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xf]);
    }
  }
  return out;
}

namespace {
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}
}  // namespace

std::string PercentDecode(absl::string_view encoded) {
  std::string out;
  out.reserve(encoded.size());
  for (size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] == '%' && i + 2 < encoded.size() &&
        HexValue(encoded[i + 1]) >= 0 && HexValue(encoded[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(encoded[i + 1]) * 16 +
                                      HexValue(encoded[i + 2])));
      i += 2;
    } else {
      out.push_back(encoded[i]);
    }
  }
  return out;
}

}  // namespace gpulet::h2
