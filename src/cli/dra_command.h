// `gpulet dra`: the kubelet-facing DRA driver (docs/dra.md). Flags only;
// the process is daemon::RunDra.
//
// Thread safety: run on the main thread, before any other thread exists.
#pragma once

#include <ostream>

#include "CLI/App.hpp"
#include "src/cli/global_options.h"
#include "src/dra/runner/dra_runner.h"

namespace gpulet::cli {

CLI::App* AddDraCommand(CLI::App& app, daemon::DraRunOptions& options);

// Serves until SIGTERM/SIGINT; the exit code: 0 clean stop, 1 failure (the
// message on `err`), 2 an unusable flag.
int RunDraCommand(const GlobalOptions& global, daemon::DraRunOptions options,
                  std::ostream& err);

}  // namespace gpulet::cli
