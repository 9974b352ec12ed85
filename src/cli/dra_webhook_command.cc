#include "src/cli/dra_webhook_command.h"

#include <string>

#include "absl/time/time.h"
#include "src/cli/app.h"

namespace gpulet::cli {

CLI::App* AddDraWebhookCommand(CLI::App& dra,
                               DraWebhookCommandOptions& options) {
  daemon::DraWebhookOptions& run = options.run;
  CLI::App* cmd = dra.add_subcommand(
      "webhook",
      "Serve the validating admission webhook that refuses ResourceClaims "
      "and ResourceClaimTemplates with a bad gpu.nvidia.com opaque "
      "configuration when they are created (HTTPS)");
  cmd->add_option("--address", run.address,
                  "host:port to serve on (port 0: any free port)")
      ->envname("GPULET_WEBHOOK_ADDRESS")
      ->capture_default_str();
  cmd->add_option("--tls-cert-file", run.tls_cert_file,
                  "PEM certificate chain to serve HTTPS with, for the "
                  "webhook's Service name (re-read when it changes); "
                  "required")
      ->envname("GPULET_WEBHOOK_TLS_CERT_FILE");
  cmd->add_option("--tls-key-file", run.tls_key_file,
                  "PEM private key of --tls-cert-file; required")
      ->envname("GPULET_WEBHOOK_TLS_KEY_FILE");
  cmd->add_option("--request-timeout", options.request_timeout_seconds,
                  "seconds a client has for one request, from its first byte "
                  "to the end of the answer")
      ->check(CLI::Range(1, 60))
      ->capture_default_str();
  return cmd;
}

int RunDraWebhookCommand(DraWebhookCommandOptions options, std::ostream& err) {
  options.run.request_timeout = absl::Seconds(options.request_timeout_seconds);
  absl::Status status = daemon::RunDraWebhook(options.run);
  if (status.ok()) return kExitOk;
  err << "gpulet: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument
             ? kExitUsage
             : kExitRuntimeError;
}

}  // namespace gpulet::cli
