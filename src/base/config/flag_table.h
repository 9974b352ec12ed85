// The one table of NVIDIA k8s-device-plugin's command-line flags as gpulet
// accepts them: name, aliases, environment variables, default, config file
// key and help text. The CLI registers its flags from it, Resolve applies
// them, and a test checks docs/configuration.md against it, so the three
// cannot drift apart.
//
// Thread safety: the table is built once, on first use, and then only read.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "src/base/config/config.h"

namespace gpulet::config {

enum class FlagKind {
  kBool,    // --x, --x=true, --x=false; variables: true/false, 1/0, ...
  kString,  // --x=value; given twice, the last one wins
  kList,    // --x=a,b or --x=a --x=b; variables: "a,b"
};

struct FlagSpec {
  std::string name;                  // "driver-root", used as --driver-root
  std::vector<std::string> aliases;  // other names for the same flag
  // Environment variables in the order consulted; the first one set to a
  // non-empty value counts.
  std::vector<std::string> env_vars;
  FlagKind kind = FlagKind::kString;
  std::string default_value;  // as documented ("none", "true", "envvar")
  std::string config_key;     // "flags.nvidiaDriverRoot"; empty: no key
  std::string help;
  // Stores `values` (list items already split) into `config`; the error
  // message says what is wrong with the value, without position or key.
  // Empty for --config-file, which names the file instead of a value.
  std::function<absl::Status(const std::vector<std::string>& values,
                             Config* config)>
      apply;
};

// Every flag, in documentation order.
const std::vector<FlagSpec>& FlagTable();

// The flag called `name` (without dashes) or having it as an alias; null
// when there is none.
const FlagSpec* FindFlag(absl::string_view name);

// The --config-file flag's name.
inline constexpr char kConfigFileFlag[] = "config-file";

}  // namespace gpulet::config
