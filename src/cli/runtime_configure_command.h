// `gpulet runtime configure`: adds gpulet-runtime to a container engine's
// configuration file (docs/runtime.md). Reads the file, has
// src/runtime/engineconfig edit the text, and writes it back atomically after
// saving the previous contents, or prints the diff (--dry-run).
//
// Thread safety: run on the main thread, one command per process.
#pragma once

#include <ostream>
#include <string>

#include "CLI/App.hpp"
#include "absl/status/status.h"

namespace gpulet::cli {

// The flags, named as nvidia-ctk's `runtime configure` names the same
// things.
struct RuntimeConfigureOptions {
  std::string runtime;  // --runtime containerd|crio|docker
  std::string config;   // --config; empty: the engine's usual file
  std::string runtime_name = "gpulet";
  std::string runtime_path = "/usr/bin/gpulet-runtime";
  bool set_as_default = false;
  bool enable_cdi = false;  // --cdi.enabled
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  bool dry_run = false;
};

// Registers `runtime` and its `configure` subcommand.
CLI::App* AddRuntimeCommand(CLI::App& app, RuntimeConfigureOptions& options);

absl::Status RunRuntimeConfigure(const RuntimeConfigureOptions& options,
                                 std::ostream& out);

// Where the previous contents of `config` are kept: `<config>.bak`, or,
// for a file in a drop-in directory (`*.d`, which engines read whole),
// `<config's name>.bak` beside that directory.
std::string BackupPath(const std::string& config);

}  // namespace gpulet::cli
