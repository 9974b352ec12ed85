// `gpulet dra webhook`: the validating admission webhook of the DRA
// driver's claim configurations (docs/dra.md "Admission webhook"). Flags
// only; the process is daemon::RunDraWebhook.
//
// Thread safety: run on the main thread, before any other thread exists.
#pragma once

#include <ostream>

#include "CLI/App.hpp"
#include "src/dra/webhook/webhook_runner.h"

namespace gpulet::cli {

struct DraWebhookCommandOptions {
  daemon::DraWebhookOptions run;
  int request_timeout_seconds = 10;
};

// Adds `webhook` under `dra` (the `gpulet dra` command).
CLI::App* AddDraWebhookCommand(CLI::App& dra,
                               DraWebhookCommandOptions& options);

// Serves until SIGTERM/SIGINT; the exit code: 0 clean stop, 1 failure (the
// message on `err`), 2 an unusable flag.
int RunDraWebhookCommand(DraWebhookCommandOptions options, std::ostream& err);

}  // namespace gpulet::cli
