// The gpulet command line: parses argv with CLI11, runs one subcommand and
// turns every failure into one line "gpulet: <message>" on `err` and an exit
// code — 0 success, 1 runtime error, 2 usage error. No exception escapes.
//
// This is the only place in gpulet that reads argv.
//
// Thread safety: call from the main thread; it sets process-wide logging
// options.
#pragma once

#include <ostream>

namespace gpulet::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeError = 1;
inline constexpr int kExitUsage = 2;

int Run(int argc, const char* const* argv, std::ostream& out,
        std::ostream& err);

}  // namespace gpulet::cli
