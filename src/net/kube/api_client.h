// ApiClient: the one way a gpulet process reaches its API server.
// MakeApiClient loads the credentials (the kubeconfig file named in the
// options, else the files of $KUBECONFIG merged as kubectl merges them, else
// the pod's service account: config::LoadApiServerConfig), opens the TLS
// transport (tls_transport.h) and puts a Client (client.h) with the given
// rate limits and retries over it; the ApiClient owns both.
//
// Errors are those of the step that failed, each naming what it read: the
// kubeconfig's path and field ("kubeconfig /x: clusters[0].cluster.server:
// ..."), the in-cluster environment variable or file, or the configuration's
// source for a server that is not an https:// URL or PEM that does not load.
//
// Thread safety: Create/MakeApiClient from any thread; the client as in
// client.h. The ApiClient must outlive every user of client().
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "src/base/metrics/registry.h"
#include "src/net/kube/client.h"
#include "src/net/kube/kubeconfig.h"
#include "src/net/kube/tls_transport.h"

namespace gpulet::kube {

struct ApiClientOptions {
  // One kubeconfig file (--kubeconfig), not merged. Empty: $KUBECONFIG's
  // files merged, else the pod's service account.
  std::string kubeconfig;
  std::string context;  // of the kubeconfig; empty: its current context
  // How $KUBECONFIG and the in-cluster variables are read, and where the
  // service account is read from when there is no kubeconfig.
  config::InClusterOptions in_cluster{};
  ClientOptions client{};
  // Whether a kubeconfig's exec credential plugin may run. Only
  // kubectl-gpulet, run by a person with their own kubeconfig, allows it;
  // gpulet's node and cluster components refuse such a kubeconfig
  // (FailedPrecondition naming it) rather than run a program from it.
  bool allow_exec_plugin = false;
  // How the plugin runs (environment, terminal, bounds).
  ExecPluginOptions exec{};
  // The process's /metrics registry, which gets the client's request
  // metrics (request_metrics.h); borrowed, it must outlive the client.
  // Null: none recorded.
  metrics::Registry* metrics = nullptr;
};

class ApiClient {
 public:
  // Opens the transport to `api` and a client over it; `exec` is how an
  // exec credential plugin of `api` runs; request metrics go to `metrics`
  // when it is not null (borrowed).
  static absl::StatusOr<std::unique_ptr<ApiClient>> Create(
      const config::ApiServerConfig& api, const ClientOptions& options,
      const ExecPluginOptions& exec = {}, metrics::Registry* metrics = nullptr);

  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  Client& client() { return client_; }
  // For messages: the server's URL, and where the configuration came from
  // ("kubeconfig /path", "in-cluster config").
  const std::string& server() const { return server_; }
  const std::string& source() const { return source_; }

 private:
  ApiClient(std::unique_ptr<TlsTransport> transport,
            const ClientOptions& options, const config::ApiServerConfig& api);

  std::unique_ptr<TlsTransport> transport_;
  Client client_;  // over *transport_
  const std::string server_;
  const std::string source_;
};

// Loads the configuration `options` name, then ApiClient::Create.
absl::StatusOr<std::unique_ptr<ApiClient>> MakeApiClient(
    const ApiClientOptions& options);

}  // namespace gpulet::kube
