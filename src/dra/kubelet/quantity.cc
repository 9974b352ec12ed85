#include "src/dra/kubelet/quantity.h"

#include <limits>
#include <string>
#include <utility>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpulet::dra {
namespace {

absl::Status Bad(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("quantity \"", text, "\": ", why));
}

// Multiplier as 2^binary * 10^decimal of the suffix; false if unknown.
bool Suffix(absl::string_view s, int& binary, int& decimal) {
  static const std::pair<const char*, std::pair<int, int>> kSuffixes[] = {
      {"", {0, 0}},    {"Ki", {10, 0}}, {"Mi", {20, 0}}, {"Gi", {30, 0}},
      {"Ti", {40, 0}}, {"Pi", {50, 0}}, {"Ei", {60, 0}}, {"k", {0, 3}},
      {"M", {0, 6}},   {"G", {0, 9}},   {"T", {0, 12}},  {"P", {0, 15}},
      {"E", {0, 18}}};
  for (const auto& [name, scale] : kSuffixes) {
    if (s == name) {
      binary = scale.first;
      decimal = scale.second;
      return true;
    }
  }
  if (s.size() >= 2 && (s[0] == 'e' || s[0] == 'E')) {
    int exponent = 0;
    if (!absl::SimpleAtoi(s.substr(1), &exponent)) return false;
    binary = 0;
    decimal = exponent;
    return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<int64_t> ParseQuantity(absl::string_view text) {
  absl::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  size_t digits_end = 0;
  while (digits_end < s.size() &&
         (absl::ascii_isdigit(s[digits_end]) || s[digits_end] == '.')) {
    ++digits_end;
  }
  const absl::string_view number = s.substr(0, digits_end);
  int binary = 0;
  int decimal = 0;
  if (number.empty() || !Suffix(s.substr(digits_end), binary, decimal)) {
    return Bad(text, "not a non-negative quantity such as 4Gi or 1500M");
  }
  // mantissa / 10^fraction_digits * 2^binary * 10^decimal, in 128 bits.
  absl::uint128 mantissa = 0;
  int fraction_digits = -1;
  for (char c : number) {
    if (c == '.') {
      if (fraction_digits >= 0) return Bad(text, "two decimal points");
      fraction_digits = 0;
      continue;
    }
    if (mantissa > absl::uint128(std::numeric_limits<int64_t>::max())) {
      return Bad(text, "too large");
    }
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    if (fraction_digits >= 0) ++fraction_digits;
  }
  decimal -= fraction_digits < 0 ? 0 : fraction_digits;
  absl::uint128 value = mantissa << binary;
  const absl::uint128 limit = std::numeric_limits<int64_t>::max();
  for (; decimal > 0 && value != 0; --decimal) {
    if (value > limit) return Bad(text, "too large");
    value *= 10;
  }
  if (decimal < -38) return value == 0 ? 0 : 1;
  for (; decimal < 0; ++decimal) value = (value + 9) / 10;  // rounds up
  if (value > limit) return Bad(text, "too large");
  return static_cast<int64_t>(value);
}

}  // namespace gpulet::dra
