// What gpulet-runtime needs to know about a runc command line: the
// subcommand, the bundle directory and the container ID. Only create and
// run change anything; every other subcommand passes through unread.
//
// runc (urfave/cli v1, Go flag rules) accepts "--flag value", "--flag=value"
// and the single-dash forms; flag parsing stops at the first positional
// argument, so the subcommand is the first argument that is neither a
// global flag nor a global flag's value.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace gpulet::runtime {

struct RuncInvocation {
  std::string subcommand;    // "create", "run", "start", ...; empty: none
  std::string bundle;        // from --bundle/-b; empty: the working dir
  std::string container_id;  // first positional after the subcommand
};

// `args` is argv without argv[0].
RuncInvocation ParseRuncArgs(const std::vector<std::string>& args);

// True for the subcommands that create a container from a bundle.
bool CreatesContainer(const RuncInvocation& invocation);

}  // namespace gpulet::runtime
