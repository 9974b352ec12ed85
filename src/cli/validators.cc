#include "src/cli/validators.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpulet::cli {
namespace {

std::string Quoted(const std::string& value) {
  return absl::StrCat("'", value, "'");
}

}  // namespace

CLI::Validator WholeNumberAtLeast(int64_t min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        int64_t n = 0;
        if (absl::SimpleAtoi(value, &n) && n >= min) return "";
        return absl::StrCat(Quoted(value), " is not a whole number of ", min,
                            " or more");
      },
      min == 1 ? std::string("POSITIVE") : absl::StrCat(">=", min));
}

CLI::Validator WholeNumberIn(int64_t min, int64_t max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        int64_t n = 0;
        if (absl::SimpleAtoi(value, &n) && n >= min && n <= max) return "";
        return absl::StrCat(Quoted(value), " is not a whole number from ", min,
                            " to ", max);
      },
      absl::StrCat(min, "..", max));
}

CLI::Validator NumberIn(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        double x = 0;
        if (absl::SimpleAtod(value, &x) && x >= min && x <= max) return "";
        return absl::StrCat(Quoted(value), " is not a number from ", min,
                            " to ", max);
      },
      absl::StrCat(min, "..", max));
}

}  // namespace gpulet::cli
