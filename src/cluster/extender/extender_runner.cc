#include "src/cluster/extender/extender_runner.h"

#include <memory>
#include <stop_token>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/clock.h"
#include "src/base/common/logging.h"
#include "src/base/common/signal_channel.h"
#include "src/base/common/status_macros.h"
#include "src/base/metrics/registry.h"
#include "src/cluster/extender/binder.h"
#include "src/cluster/extender/extender.h"
#include "src/cluster/extender/gone_pods.h"
#include "src/cluster/extender/node_cache.h"
#include "src/net/http/server.h"
#include "src/net/kube/api_client.h"
#include "src/net/kube/client.h"
#include "src/net/kube/list_watcher.h"

namespace gpulet::daemon {
absl::Status RunExtender(const ExtenderRunOptions& options) {
  GPULET_ASSIGN_OR_RETURN(std::unique_ptr<SignalChannel> signals,
                          SignalChannel::Create());
  GPULET_ASSIGN_OR_RETURN(
      extender::Policy policy,
      extender::ParsePolicy(options.default_policy, "--default-policy"));
  if (options.resource.find('/') == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--resource-name \"", options.resource,
        "\": an extended resource name has a domain (nvidia.com/gpu-memory)"));
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert-file and --tls-key-file go together: give both or "
        "neither");
  }
  if (!options.client_ca_file.empty() && options.tls_cert_file.empty()) {
    return absl::InvalidArgumentError(
        "--client-ca-file needs --tls-cert-file and --tls-key-file");
  }
  if (!options.allowed_client_names.empty() && options.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--allowed-client-names needs --client-ca-file: without client "
        "certificates there are no names to check");
  }
  if (options.client_ca_file.empty()) {
    GPULET_LOG(WARNING)
        << "extender: no --client-ca-file: anyone who reaches "
        << options.address
        << " may call filter, prioritize and bind; serve kube-scheduler "
           "with mutual TLS (docs/extender.md)";
  }
  // Before the API client, which records its requests in it.
  metrics::Registry registry;
  kube::ApiClientOptions api_options;
  api_options.kubeconfig = options.kubeconfig;
  api_options.metrics = &registry;
  api_options.context = options.context;
  api_options.client.qps = options.kube_qps;
  api_options.client.burst = options.kube_burst;
  GPULET_ASSIGN_OR_RETURN(std::unique_ptr<kube::ApiClient> api,
                          kube::MakeApiClient(api_options));
  kube::Client& client = api->client();
  extender::NodeCache cache;
  extender::GonePods gone;
  extender::BinderOptions binder_options;
  binder_options.gone_pods = &gone;
  binder_options.resource = options.resource;
  binder_options.default_policy = policy;
  binder_options.scheduler_names = options.scheduler_names;
  extender::Binder binder(client, cache, binder_options);
  extender::ExtenderOptions extender_options;
  extender_options.resource = options.resource;
  extender_options.default_policy = policy;
  extender_options.gone_pods = &gone;
  extender::Extender ext(cache, binder, registry, extender_options);
  kube::ListWatcher nodes(
      client, common::RealClock::Get(), "/api/v1/nodes", {},
      {.on_replace =
           [&cache](std::vector<nlohmann::json> items, const std::string&) {
             cache.Replace(items);
             GPULET_LOG(INFO)
                 << "extender: node cache holds " << cache.size() << " nodes";
           },
       .on_event = [&cache](const kube::WatchEvent& e) { cache.Apply(e); }});
  // Scheduled pods, to notice placed pods that were deleted or finished
  // before the kubelet admitted them.
  kube::ListWatcher pods(
      client, common::RealClock::Get(), "/api/v1/pods",
      {.label_selector = "",
       .field_selector = "spec.nodeName!=",
       .resource_version = ""},
      {.on_replace = [&gone](std::vector<nlohmann::json> items,
                             const std::string&) { gone.Replace(items); },
       .on_event = [&gone](const kube::WatchEvent& e) { gone.Apply(e); }});
  std::jthread watch_nodes(
      [&nodes](std::stop_token stop) { (void)nodes.Run(stop); });
  std::jthread watch_pods(
      [&pods](std::stop_token stop) { (void)pods.Run(stop); });
  GPULET_LOG(INFO) << "extender: API server " << api->server() << " ("
                   << api->source() << "), resource " << options.resource
                   << ", default policy " << options.default_policy;
  http::ServerOptions server_options;
  server_options.address = options.address;
  server_options.tls_cert_file = options.tls_cert_file;
  server_options.tls_key_file = options.tls_key_file;
  server_options.client_ca_file = options.client_ca_file;
  server_options.allowed_client_names = options.allowed_client_names;
  // Probes (the kubelet's httpGet sends no client certificate) and
  // nothing else: the verbs and /metrics need an allowed certificate.
  server_options.open_paths = {"/healthz", "/readyz"};
  server_options.request_deadline = options.request_deadline;
  server_options.idle_timeout = options.idle_timeout;
  server_options.max_body_bytes = options.max_body_bytes;
  server_options.max_connections = options.max_connections;
  server_options.max_connections_per_peer = options.max_connections_per_peer;
  server_options.name = "extender";
  absl::StatusOr<std::unique_ptr<http::Server>> server = http::Server::Start(
      server_options, [&ext](const http::Request& r) { return ext.Handle(r); });
  if (!server.ok()) return server.status();
  if (options.on_serving) options.on_serving((*server)->port());
  const int signo = signals->Wait();
  GPULET_LOG(INFO) << "extender: "
                   << (signo < 0 ? "signal wait failed" : SignalName(signo))
                   << ", stopping";
  server->reset();
  watch_nodes.request_stop();
  watch_pods.request_stop();
  return signo < 0 ? absl::InternalError("waiting for signals failed")
                   : absl::OkStatus();
}

}  // namespace gpulet::daemon
