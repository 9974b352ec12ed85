// ExecPlugin: runs a kubeconfig's exec credential plugin once and returns
// the credential it printed (exec_credential.h), as kubectl does:
//
// - The command: a path with a slash is taken as is when absolute, else
//   relative to the kubeconfig's directory; a bare name is looked up in
//   the PATH of the environment below. Not found: NotFound, with the
//   kubeconfig's installHint.
// - Its environment, given explicitly: the caller's environment (the plugin
//   needs HOME, PATH, its cloud's profile and proxy variables, as kubectl
//   passes them), then the exec section's env entries (replacing a variable
//   of the same name), then KUBERNETES_EXEC_INFO.
// - Interactive (spec.interactive, and the terminal as its standard input)
//   with interactiveMode Always, or IfAvailable when standard input is a
//   terminal; Never, or IfAvailable without a terminal, gets /dev/null.
//   Always without a terminal is FailedPrecondition before anything runs.
// - Its standard error goes to the caller's standard error (where a
//   plugin prints prompts and failures for the user); its standard output
//   is read up to `max_output` bytes.
// - A deadline (`timeout`, `interactive_timeout` when a person may be
//   typing): past it the plugin is killed and reaped (common::RunChild).
//
// Errors name the kubeconfig user and the command: NotFound for the
// command, FailedPrecondition when the plugin could not run, failed or
// timed out, InvalidArgument for an answer that breaks the contract. None
// is a code the API client retries (which would run the plugin again).
// The credential never appears in a message or a log line.
//
// Thread safety: Run() may be called from any thread; it runs one plugin
// at a time per call and touches no shared state.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/net/kube/exec_config.h"
#include "src/net/kube/exec_credential.h"

namespace gpulet::kube {

struct ExecPluginOptions {
  // "NAME=value" entries; nullopt: this process's environment.
  std::optional<std::vector<std::string>> environment = std::nullopt;
  // nullopt: whether descriptor 0 is a terminal.
  std::optional<bool> stdin_is_terminal = std::nullopt;
  int stderr_fd = 2;
  absl::Duration timeout = absl::Minutes(1);
  absl::Duration interactive_timeout = absl::Minutes(10);
  size_t max_output = 1 << 20;
};

class ExecPlugin {
 public:
  ExecPlugin(config::ExecConfig exec, ExecClusterInfo cluster,
             ExecPluginOptions options = {});

  absl::StatusOr<ExecCredential> Run() const;

  // "exec plugin \"aws\" of kubeconfig user \"u\"", for messages.
  const std::string& who() const { return who_; }

 private:
  absl::StatusOr<std::string> ResolveCommand(
      const std::vector<std::string>& env) const;
  std::vector<std::string> PluginEnvironment(std::vector<std::string> base,
                                             bool interactive) const;
  absl::Status NotFound(absl::string_view what) const;

  const config::ExecConfig exec_;
  const ExecClusterInfo cluster_;
  const ExecPluginOptions options_;
  const std::string who_;
};

}  // namespace gpulet::kube
