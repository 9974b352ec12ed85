// ProcessApiClient: the device plugin process's one API server client,
// which the label publisher and the memory shares' node agent share. It is
// built on first use, from a kubeconfig path or, when that is empty, the
// pod's service account, and lives as long as the process: everything that
// holds the client is destroyed before it. Its request metrics
// (rest_client_*, kube::RequestMetrics) go to the process's registry.
//
// Thread safety: not thread-safe; the loop thread only. The client it
// hands out is thread-safe (kube::Client).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "src/base/metrics/registry.h"
#include "src/net/kube/api_client.h"
#include "src/net/kube/client.h"

namespace gpulet::daemon {

class ProcessApiClient {
 public:
  // `metrics`: the process's registry (borrowed; it outlives this).
  ProcessApiClient(std::string kubeconfig, metrics::Registry& metrics);
  ProcessApiClient(const ProcessApiClient&) = delete;
  ProcessApiClient& operator=(const ProcessApiClient&) = delete;

  // The client, built the first time; an error (naming what could not be
  // read) while the API server cannot be reached from here.
  absl::StatusOr<kube::Client*> Get();

 private:
  const std::string kubeconfig_;
  metrics::Registry& metrics_;
  std::unique_ptr<kube::ApiClient> api_;
};

}  // namespace gpulet::daemon
