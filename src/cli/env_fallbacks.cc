#include "src/cli/env_fallbacks.h"

#include <optional>

#include "CLI/Error.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gpulet::cli {
namespace {

// CLI11's ValidationError reads "<option name>: <why>"; the option's name is
// not what the user set.
std::string WhyRefused(const CLI::Option& option, const CLI::Error& e,
                       const std::string& value) {
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    return absl::StrCat(
        "\"", value, "\" is not ",
        option.get_type_name().empty() ? "true or false" : "a valid value");
  }
  std::string why = e.what();
  const std::string prefix = option.get_name() + ": ";
  if (absl::StartsWith(why, prefix)) why.erase(0, prefix.size());
  return why;
}

}  // namespace

CLI::Option* EnvFallbacks::Add(CLI::Option* option, std::string name) {
  if (!absl::StrContains(option->get_description(), "[env: ")) {
    option->description(
        absl::StrCat(option->get_description(), " [env: ", name, "]"));
  }
  entries_.emplace_back(option, std::move(name));
  return option;
}

absl::Status EnvFallbacks::Apply(const config::EnvLookup& env) {
  for (const auto& [option, name] : entries_) {
    if (option->count() > 0) continue;
    std::optional<std::string> value = env(name);
    if (!value.has_value() || value->empty()) continue;
    option->add_result(*value);
    try {
      option->run_callback();
    } catch (const CLI::Error& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "environment variable ", name, ": ", WhyRefused(*option, e, *value)));
    }
    from_env_.insert(option);
  }
  return absl::OkStatus();
}

std::string EnvFallbacks::Source(const CLI::Option* option) const {
  if (from_env_.contains(option)) {
    for (const auto& [o, name] : entries_) {
      if (o == option) return absl::StrCat("environment variable ", name);
    }
  }
  return option->get_name();
}

}  // namespace gpulet::cli
