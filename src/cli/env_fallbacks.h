// Environment variables that stand in for a command's options, read by
// gpulet after CLI11 has parsed the command line (instead of CLI11's
// envname), so that a bad value is reported as the variable's ("environment
// variable GFD_ONESHOT: ...") and not as the flag's. A flag on the command
// line wins: its variable is then not read at all.
//
// Ownership: holds pointers to options owned by the CLI::App, which must
// outlive it.
// Thread safety: not shared between threads.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "CLI/Option.hpp"
#include "absl/status/status.h"
#include "src/base/config/resolve.h"

namespace gpulet::cli {

class EnvFallbacks {
 public:
  // `option` falls back to variable `name`; help shows "[env: NAME]" after
  // its description unless the description already names its variables.
  // Returns `option`.
  CLI::Option* Add(CLI::Option* option, std::string name);

  // Gives every option the command line left unset the value of its
  // variable, when that is set and not empty, through the option's own
  // validators and conversion. A value they refuse is InvalidArgument
  // "environment variable NAME: <why>".
  absl::Status Apply(const config::EnvLookup& env);

  // Where `option`'s value came from: "environment variable NAME" after
  // Apply gave it its variable's value, else its flag ("--sleep-interval").
  std::string Source(const CLI::Option* option) const;

 private:
  std::vector<std::pair<CLI::Option*, std::string>> entries_;
  std::set<const CLI::Option*> from_env_;
};

}  // namespace gpulet::cli
