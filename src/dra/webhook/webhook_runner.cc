#include "src/dra/webhook/webhook_runner.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "src/base/common/logging.h"
#include "src/base/common/signal_channel.h"
#include "src/base/common/status_macros.h"
#include "src/dra/kubelet/device_names.h"
#include "src/dra/webhook/admission.h"
#include "src/net/http/server.h"

namespace gpulet::daemon {

absl::Status RunDraWebhook(const DraWebhookOptions& options) {
  if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert-file and --tls-key-file are required: the API server "
        "calls admission webhooks over HTTPS only");
  }
  GPULET_ASSIGN_OR_RETURN(std::unique_ptr<SignalChannel> signals,
                          SignalChannel::Create());
  http::ServerOptions server_options;
  server_options.address = options.address;
  server_options.tls_cert_file = options.tls_cert_file;
  server_options.tls_key_file = options.tls_key_file;
  server_options.request_deadline = options.request_timeout;
  server_options.name = "dra-webhook";
  GPULET_ASSIGN_OR_RETURN(
      std::unique_ptr<http::Server> server,
      http::Server::Start(server_options,
                          dra::WebhookHandler(std::string(dra::kDriverName))));
  GPULET_LOG(INFO) << "dra webhook: serving " << dra::kWebhookPath
                   << " over HTTPS on port " << server->port() << " for "
                   << dra::kDriverName;
  if (options.on_serving) options.on_serving(server->port());
  const int signo = signals->Wait();
  GPULET_LOG(INFO) << "dra webhook: "
                   << (signo < 0 ? "signal wait failed" : SignalName(signo))
                   << ", stopping";
  server.reset();
  return signo < 0 ? absl::InternalError("waiting for signals failed")
                   : absl::OkStatus();
}

}  // namespace gpulet::daemon
