// `gpulet extender`: the scheduler extender for GPU-memory shares
// (docs/extender.md). Flags only; the process is daemon::RunExtender.
//
// Thread safety: run on the main thread, before any other thread exists.
#pragma once

#include <ostream>

#include "CLI/App.hpp"
#include "src/cluster/extender/extender_runner.h"

namespace gpulet::cli {

struct ExtenderCommandOptions {
  daemon::ExtenderRunOptions run;
  int request_timeout_seconds = 30;
  int idle_timeout_seconds = 5;
};

CLI::App* AddExtenderCommand(CLI::App& app, ExtenderCommandOptions& options);

// Serves until SIGTERM/SIGINT; the exit code: 0 clean stop, 1 failure
// (the message on `err`), 2 an unusable flag.
int RunExtenderCommand(const ExtenderCommandOptions& options,
                       std::ostream& err);

}  // namespace gpulet::cli
