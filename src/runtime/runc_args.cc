#include "src/runtime/runc_args.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace gpulet::runtime {
namespace {

// runc 1.1's global flags that take a value.
constexpr std::array<std::string_view, 5> kGlobalValueFlags = {
    "log", "log-format", "root", "criu", "rootless"};
// Flags of create and run that take a value.
constexpr std::array<std::string_view, 5> kCreateValueFlags = {
    "bundle", "b", "console-socket", "pid-file", "preserve-fds"};

struct Flag {
  bool is_flag = false;
  std::string_view name;  // without dashes and without "=value"
  bool has_inline_value = false;
  std::string_view inline_value;
};

Flag SplitFlag(std::string_view arg) {
  Flag flag;
  if (arg.size() < 2 || arg[0] != '-') return flag;
  flag.is_flag = true;
  std::string_view body = arg.substr(arg[1] == '-' ? 2 : 1);
  size_t eq = body.find('=');
  if (eq != std::string_view::npos) {
    flag.has_inline_value = true;
    flag.inline_value = body.substr(eq + 1);
    body = body.substr(0, eq);
  }
  flag.name = body;
  return flag;
}

template <size_t N>
bool Contains(const std::array<std::string_view, N>& names,
              std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

RuncInvocation ParseRuncArgs(const std::vector<std::string>& args) {
  RuncInvocation invocation;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    if (args[i] == "--") {
      ++i;
      break;
    }
    Flag flag = SplitFlag(args[i]);
    if (!flag.is_flag) break;
    if (!flag.has_inline_value && Contains(kGlobalValueFlags, flag.name)) ++i;
  }
  if (i >= args.size()) return invocation;
  invocation.subcommand = args[i++];
  if (!CreatesContainer(invocation)) return invocation;
  for (; i < args.size(); ++i) {
    if (args[i] == "--") {
      ++i;
      break;
    }
    Flag flag = SplitFlag(args[i]);
    if (!flag.is_flag) break;
    if (!Contains(kCreateValueFlags, flag.name)) continue;
    std::string_view value = flag.inline_value;
    if (!flag.has_inline_value) {
      if (i + 1 >= args.size()) return invocation;
      value = args[++i];
    }
    if (flag.name == "bundle" || flag.name == "b") {
      invocation.bundle = std::string(value);
    }
  }
  if (i < args.size()) invocation.container_id = args[i];
  return invocation;
}

bool CreatesContainer(const RuncInvocation& invocation) {
  return invocation.subcommand == "create" || invocation.subcommand == "run";
}

}  // namespace gpulet::runtime
