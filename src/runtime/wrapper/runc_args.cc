#include "src/runtime/wrapper/runc_args.h"

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

// Walks the flags from args[i] up to the first argument that is not one
// (or past "--"); a flag in `value_flags` without "=value" takes the next
// argument. `on_value` sees every such flag with its value. Returns the
// position of the first argument after the flags; args.size() when a value
// is missing.
template <size_t N, typename OnValue>
size_t SkipFlags(const std::vector<std::string>& args, size_t i,
                 const std::array<std::string_view, N>& value_flags,
                 OnValue on_value) {
  for (; i < args.size(); ++i) {
    if (args[i] == "--") return i + 1;
    Flag flag = SplitFlag(args[i]);
    if (!flag.is_flag) return i;
    if (!Contains(value_flags, flag.name)) continue;
    std::string_view value = flag.inline_value;
    if (!flag.has_inline_value) {
      if (i + 1 >= args.size()) return args.size();
      value = args[++i];
    }
    on_value(flag.name, value);
  }
  return i;
}

}  // namespace

RuncInvocation ParseRuncArgs(const std::vector<std::string>& args) {
  RuncInvocation invocation;
  size_t i = SkipFlags(args, 0, kGlobalValueFlags,
                       [](std::string_view, std::string_view) {});
  if (i >= args.size()) return invocation;
  invocation.subcommand = args[i++];
  if (!CreatesContainer(invocation)) return invocation;
  i = SkipFlags(args, i, kCreateValueFlags,
                [&](std::string_view name, std::string_view value) {
                  if (name == "bundle" || name == "b") {
                    invocation.bundle = std::string(value);
                  }
                });
  if (i < args.size()) invocation.container_id = args[i];
  return invocation;
}

bool CreatesContainer(const RuncInvocation& invocation) {
  return invocation.subcommand == "create" || invocation.subcommand == "run";
}

}  // namespace gpulet::runtime
