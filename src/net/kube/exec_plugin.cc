#include "src/net/kube/exec_plugin.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/base/common/child_process.h"
#include "src/base/common/clock.h"

extern char** environ;

namespace gpulet::kube {
namespace {

std::vector<std::string> ProcessEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    env.emplace_back(*e);
  }
  return env;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

// The value of NAME in "NAME=value" entries; the last one wins, as with
// the environment a child sees.
std::string Lookup(const std::vector<std::string>& env,
                   absl::string_view name) {
  std::string value;
  const std::string prefix = absl::StrCat(name, "=");
  for (const std::string& e : env) {
    if (absl::StartsWith(e, prefix)) value = e.substr(prefix.size());
  }
  return value;
}

bool Named(const std::string& entry, absl::string_view name) {
  return absl::StartsWith(entry, name) && entry.size() > name.size() &&
         entry[name.size()] == '=';
}

}  // namespace

ExecPlugin::ExecPlugin(config::ExecConfig exec, ExecClusterInfo cluster,
                       ExecPluginOptions options)
    : exec_(std::move(exec)),
      cluster_(std::move(cluster)),
      options_(std::move(options)),
      who_(absl::StrCat("exec plugin \"", exec_.command,
                        "\" of kubeconfig user \"", exec_.user, "\"")) {}

absl::Status ExecPlugin::NotFound(absl::string_view what) const {
  return absl::NotFoundError(absl::StrCat(
      who_, ": ", what,
      exec_.install_hint.empty() ? ""
                                 : absl::StrCat("\n", exec_.install_hint)));
}

absl::StatusOr<std::string> ExecPlugin::ResolveCommand(
    const std::vector<std::string>& env) const {
  const std::string& command = exec_.command;
  if (absl::StrContains(command, '/')) {
    std::filesystem::path p(command);
    if (p.is_relative() && !exec_.base_dir.empty()) {
      p = std::filesystem::path(exec_.base_dir) / p;
    }
    if (!IsExecutableFile(p.string())) {
      return NotFound(absl::StrCat(p.string(), " is not an executable file"));
    }
    return p.string();
  }
  for (absl::string_view dir :
       absl::StrSplit(Lookup(env, "PATH"), ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", command);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return NotFound("command not found in PATH");
}

std::vector<std::string> ExecPlugin::PluginEnvironment(
    std::vector<std::string> base, bool interactive) const {
  std::vector<std::string> env;
  for (std::string& e : base) {
    bool replaced = Named(e, kExecInfoEnv);
    for (const auto& [name, value] : exec_.env) replaced |= Named(e, name);
    if (!replaced) env.push_back(std::move(e));
  }
  for (const auto& [name, value] : exec_.env) {
    env.push_back(absl::StrCat(name, "=", value));
  }
  env.push_back(absl::StrCat(kExecInfoEnv, "=",
                             ExecInfoJson(exec_, interactive, cluster_)));
  return env;
}

absl::StatusOr<ExecCredential> ExecPlugin::Run() const {
  const bool terminal = options_.stdin_is_terminal.value_or(::isatty(0) == 1);
  bool interactive = false;
  switch (exec_.interactive_mode) {
    case config::InteractiveMode::kNever:
      break;
    case config::InteractiveMode::kIfAvailable:
      interactive = terminal;
      break;
    case config::InteractiveMode::kAlways:
      if (!terminal) {
        return absl::FailedPreconditionError(absl::StrCat(
            who_,
            ": interactiveMode is Always, but standard input is not a "
            "terminal"));
      }
      interactive = true;
      break;
  }
  std::vector<std::string> base =
      options_.environment.value_or(ProcessEnvironment());
  absl::StatusOr<std::string> path = ResolveCommand(base);
  if (!path.ok()) return path.status();
  common::ChildSpec spec;
  spec.argv.push_back(*path);
  spec.argv.insert(spec.argv.end(), exec_.args.begin(), exec_.args.end());
  spec.env = PluginEnvironment(std::move(base), interactive);
  spec.stdin_fd = interactive ? 0 : -1;
  spec.stderr_fd = options_.stderr_fd;
  spec.own_process_group = !interactive;
  const absl::Duration timeout =
      interactive ? options_.interactive_timeout : options_.timeout;
  absl::StatusOr<common::ChildResult> ran = common::RunChild(
      spec, options_.max_output, common::RealClock::Get().Now() + timeout);
  if (!ran.ok()) {
    if (ran.status().code() == absl::StatusCode::kNotFound) {
      return NotFound(ran.status().message());
    }
    // Not Unavailable or DeadlineExceeded: the client would retry those,
    // running the plugin again.
    return absl::FailedPreconditionError(
        absl::StrCat(who_, ": ", ran.status().message()));
  }
  if (!common::ExitedCleanly(ran->wait_status)) {
    return absl::FailedPreconditionError(
        absl::StrCat(who_, ": ", common::DescribeWaitStatus(ran->wait_status),
                     " (see its standard error)"));
  }
  return ParseExecCredential(ran->output, exec_.api_version, who_);
}

}  // namespace gpulet::kube
