// `gpulet dra webhook` as a process: the validating admission webhook of
// our driver's claim configurations (admission.h) served over HTTPS on one
// http::Server until SIGTERM or SIGINT. It reads no API object and holds no
// credential: the API server sends it the claims, it answers. The
// certificate is read again when its files change (a rotated Secret).
//
// Thread safety: call once, from the main thread, before any other thread
// is created.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gpulet::daemon {

struct DraWebhookOptions {
  std::string address = ":8443";
  // Required: the API server calls webhooks over HTTPS only.
  std::string tls_cert_file;
  std::string tls_key_file;
  // The API server's default webhook timeout is 10 s.
  absl::Duration request_timeout = absl::Seconds(10);
  // Called once serving, with the port (tests serve on port 0).
  std::function<void(int port)> on_serving{};
};

// Errors name the flag at fault (InvalidArgument) or the address.
absl::Status RunDraWebhook(const DraWebhookOptions& options);

}  // namespace gpulet::daemon
