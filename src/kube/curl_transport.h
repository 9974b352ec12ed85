// CurlTransport: the Transport to a real API server, HTTPS over libcurl.
//
// Security rules, enforced here for every request:
// - The server's certificate is always verified (peer and host name), against
//   the configured CA only when one is given (kubeconfig
//   certificate-authority[-data], in-cluster ca.crt), else against the
//   system's trust store. There is no switch to turn verification off.
// - Only https:// is spoken; redirects are not followed (a credential never
//   goes to another host); proxies from the environment are not used.
// - Client certificates and keys are handed to TLS from memory; the bearer
//   token comes from a TokenSource that re-reads a rotating token file.
//   Neither ever appears in a log line or a Status message.
//
// Each request borrows a libcurl handle from a small pool, so connections
// are kept alive between requests on different threads.
//
// Thread safety: Do() and Stream() may be called from any number of threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/common/clock.h"
#include "src/config/kubeconfig.h"
#include "src/kube/token_source.h"
#include "src/kube/transport.h"

namespace gpulet::kube {

struct CurlTransportOptions {
  // Drives token-file refresh; must outlive the transport.
  const common::Clock* clock = &common::RealClock::Get();
  absl::Duration token_refresh = absl::Minutes(1);
  absl::Duration connect_timeout = absl::Seconds(10);
};

class CurlTransport final : public Transport {
 public:
  // InvalidArgument when the server is not an https:// URL or the client
  // certificate comes without its key.
  static absl::StatusOr<std::unique_ptr<CurlTransport>> Create(
      const config::ApiServerConfig& config,
      const CurlTransportOptions& options = {});
  ~CurlTransport() override;

  absl::StatusOr<Response> Do(const Request& request) override;
  absl::StatusOr<Response> Stream(const Request& request,
                                  const ChunkFn& on_chunk,
                                  std::stop_token stop) override;

 private:
  struct Exchange;
  CurlTransport(const config::ApiServerConfig& config,
                const CurlTransportOptions& options);
  absl::StatusOr<Response> Perform(const Request& request,
                                   const ChunkFn* on_chunk,
                                   std::stop_token stop);
  void* TakeHandle();
  void ReturnHandle(void* handle);

  const config::ApiServerConfig config_;
  const CurlTransportOptions options_;
  TokenSource tokens_;
  absl::Mutex mu_;
  std::vector<void*> idle_ ABSL_GUARDED_BY(mu_);  // CURL* easy handles
};

}  // namespace gpulet::kube
