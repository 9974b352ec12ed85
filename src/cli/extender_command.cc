#include "src/cli/extender_command.h"

#include <string>

#include "absl/time/time.h"
#include "src/cli/app.h"
#include "src/cli/validators.h"

namespace gpulet::cli {

CLI::App* AddExtenderCommand(CLI::App& app, ExtenderCommandOptions& options) {
  daemon::ExtenderRunOptions& run = options.run;
  CLI::App* cmd = app.add_subcommand(
      "extender",
      "Serve kube-scheduler's HTTP extender for GPU-memory shares "
      "(filter, prioritize, bind)");
  cmd->add_option("--address", run.address,
                  "host:port to serve on (port 0: any free port)")
      ->envname("GPULET_EXTENDER_ADDRESS")
      ->capture_default_str();
  // Not ->envname("KUBECONFIG"): $KUBECONFIG may list several files, which
  // the API client merges; --kubeconfig is exactly one.
  cmd->add_option("--kubeconfig", run.kubeconfig,
                  "kubeconfig file (default: the files of $KUBECONFIG "
                  "merged, else the pod's service account)");
  cmd->add_option("--context", run.context,
                  "kubeconfig context (default: current-context)");
  cmd->add_option("--resource-name", run.resource,
                  "extended resource of GPU-memory units")
      ->envname("GPULET_MEMORY_RESOURCE")
      ->capture_default_str();
  cmd->add_option("--default-policy", run.default_policy,
                  "node choice for pods without the gpulet.dev/"
                  "gpu-memory-policy annotation")
      ->check(CLI::IsMember({"binpack", "spread"}))
      ->envname("GPULET_MEMORY_POLICY")
      ->capture_default_str();
  cmd->add_option("--tls-cert-file", run.tls_cert_file,
                  "PEM certificate chain to serve HTTPS with (re-read when it "
                  "changes)");
  cmd->add_option("--tls-key-file", run.tls_key_file,
                  "PEM private key of --tls-cert-file");
  cmd->add_option("--client-ca-file", run.client_ca_file,
                  "PEM CA certificates of client certificates: mutual TLS, "
                  "only clients with a certificate they signed may call the "
                  "verbs and /metrics (/healthz and /readyz stay open)");
  cmd->add_option("--allowed-client-names", run.allowed_client_names,
                  "comma-separated names, one of which a client "
                  "certificate's common name or DNS name must be (default: "
                  "any the client CA signed)")
      ->delimiter(',');
  cmd->add_option("--scheduler-names", run.scheduler_names,
                  "comma-separated spec.schedulerName values of the pods "
                  "bind accepts (kube-scheduler profiles using the extender)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--request-timeout", options.request_timeout_seconds,
                  "seconds a client has for one request, from its first byte "
                  "to the end of the answer")
      ->check(WholeNumberIn(1, 3600))
      ->capture_default_str();
  cmd->add_option("--max-body-bytes", run.max_body_bytes,
                  "largest request body accepted (larger: 413)")
      ->check(WholeNumberIn(1024, int64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--max-connections", run.max_connections,
                  "connections served at once (idle ones give way to new "
                  "ones; past that, more wait in the backlog)")
      ->check(WholeNumberIn(1, 4096))
      ->capture_default_str();
  cmd->add_option("--max-connections-per-peer", run.max_connections_per_peer,
                  "connections served at once from one IP address")
      ->check(WholeNumberIn(1, 4096))
      ->capture_default_str();
  cmd->add_option("--idle-timeout", options.idle_timeout_seconds,
                  "seconds a connection may stay idle (TLS handshake, or "
                  "between requests) before it is closed")
      ->check(WholeNumberIn(1, 3600))
      ->capture_default_str();
  cmd->add_option("--kube-api-qps", run.kube_qps,
                  "API server requests per second")
      ->check(NumberIn(1, 10000))
      ->capture_default_str();
  cmd->add_option("--kube-api-burst", run.kube_burst,
                  "API server request burst")
      ->check(WholeNumberIn(1, 10000))
      ->capture_default_str();
  return cmd;
}

int RunExtenderCommand(const ExtenderCommandOptions& options,
                       std::ostream& err) {
  daemon::ExtenderRunOptions run = options.run;
  run.request_deadline = absl::Seconds(options.request_timeout_seconds);
  run.idle_timeout = absl::Seconds(options.idle_timeout_seconds);
  absl::Status status = daemon::RunExtender(run);
  if (status.ok()) return kExitOk;
  err << "gpulet: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument
             ? kExitUsage
             : kExitRuntimeError;
}

}  // namespace gpulet::cli
